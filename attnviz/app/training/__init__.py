"""The server's training queue: one queue per process (`jobs.py`), trainings run by a paced worker in a child process
(`worker.py`, `pacing.py`), the memory and CPU a container allows (`cgroup.py`), and honest estimates (`timings.py`).
"""
