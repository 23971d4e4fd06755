"""Where student code runs, and how the parent talks to it.

`jail` (the tiers: bubblewrap, a uid of its own, a plain process) with `tiers` (which tier
this machine provides, which one ``--sandbox`` gets), `bwrap`, `uid`, `disk` and `host` ·
`session` (Session, ReferenceChild) · `child_process` (Child: one child, started in its jail)
· `limits` (Limits: a run's resource limits) · `import_paths` (the installation directories
a child may import from) · `answers` (a child's answers, parsed in the parent) · `cpu_clock`
(a process's CPU time, read from the kernel) · `child/` (the code that runs next to student
code: standard library only). Below: `core/`, `trees/`.
"""
