"""The live class: a teacher's session drives, the students' sessions follow, the class answers questions.

    store.py         the shared state's interface (`ClassStore`), its records, limits and `open_store(url)`
    records.py       those records, limits and codes (store.py names them too; the backends import them here)
    backend.py       what both backends share: the limits' checks, the records' JSON, the error when unreachable
    sqlite_store.py  the default backend: one file under the data folder, for one server (`make run`)
    redis_store.py   the backend for several replicas (ATTNVIZ_CLASS_STORE=redis://host:6379/0)
    questions.py     the questions a page's state allows, their truths, the answers marked, summed up, as CSV
    subjects.py      what each page's state can be asked about, computed by the page's own code
    answers.py       a student's answer checked, stored as JSON, read back and marked (the tolerances)

A class's state is a page's link parameters, validated by the page's codec like any link: nothing of it runs as code.
"""
