from jitterscope.cli import main

raise SystemExit(main())
