"""Live class benchmark: a teacher and its students behind the real nginx, a shared Redis, a replica killed.

    python -m bench.liveclass                                   # a full run: 30 students, a 3-minute lesson
    python -m bench.liveclass --students 5 --minutes 1 --idle-seconds 15   # a short run while developing

A real redis-server (testkit/redis_server.py) holds the class; two app replicas use it (ATTNVIZ_CLASS_STORE) behind
nginx with the project's site file, as bench/classload runs them. Every client is a simulated browser going through
the proxy (testkit/proxyclient.py). The teacher opens the teacher link of a class made in the store; every student
opens the join link and then does what the page's follower component does in a browser: a long poll of the class's
version through nginx, with its affinity cookie, and the component's trigger (a rerun) when the version moved.

Phases: idle without students, the teacher's changes alone, the students join, idle with every student following,
the same changes followed, then the lesson: a change every 2 s (temperature, a sentence, a page switch now and then),
three questions asked, answered and revealed with the page's own buttons, one replica SIGKILLed and restarted.

Results: bench/results/<date>-liveclass.md and .json. The method is in bench/README.md ("Live class").
"""
