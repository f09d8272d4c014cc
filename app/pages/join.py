"""The page /join: a student's phone in a live class (app/classroom/phone.py)."""
from lineare.app.classroom.phone import join_page

join_page().servable()
