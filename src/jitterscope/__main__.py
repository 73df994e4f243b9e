from jitterscope.entry import main

raise SystemExit(main())
