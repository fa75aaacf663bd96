"""attnviz: the entry point. It routes every URL to its page in app_pages/ (attnviz/app/ui/navigation.py)."""

from attnviz.app.ui.navigation import run_app

run_app()
