"""The modules of the pipeline benchmark (``bench/pipeline.py``, its entry point and documentation).

- ``instrumentation``: inside each ``serve`` process and its controller process: statements, commits and
  controller runs counted
- ``members``: the simulated member clusters, each a process counting the requests it answers
- ``servers``: the ``serve`` processes and their children (start, readiness, CPU, RSS, stop)
- ``processes``: what both kinds of process share (free ports, ``/proc`` CPU, waiting, entry commands)
- ``database``: scratch and benchmark databases, ``pgbench``, ``pg_stat_database``
- ``progress``: the milestones, polled from the benchmark database
- ``workload``: the objects written and the client threads that PUT them
- ``leases``: with ``--lease-clusters`` only: pull-mode agents renewing their clusters' leases through the API
  while the pipeline runs, their set-up (the clusters joined and Ready) and their latencies
- ``metering``: samples of every counter and the difference between two
- ``cold_start``: when restarted servers are ready and back at the idle level
- ``run``: the phases in order (set-up, timed pipeline, idle, cold start)
- ``figures``: the JSON figures and the text report
- ``heap``: with ``--heap-dir`` only (measurement): tracemalloc, heap reports (VmRSS, glibc's and pymalloc's
  own accounts, object counts, RSS after ``malloc_trim``) before the writes and after the idle window
"""
