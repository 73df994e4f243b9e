"""Designed experiments on noise sources: `jitterscope doe run` and `doe analyze`.

plan      the YAML plan, validated into plain data before anything changes
design    2^k and 2^(k-p) designs: Yates order, sign table, generators, aliases
factors   built-in factors that change the real system through the Journal
loads     the background loads (cache, UDP flood) those factors start
response  what one run measures (a `jitterscope measure` metric or a user command)
runner    run order, journal of finished runs, resume, progress, safety
analysis  effects, allocation of variation, CIs, Kruskal-Wallis, Dunn, outliers
render    terminal tables, JSON and the box plot
"""
