"""A live class: students answer each lesson card on their phones, the projector shows the tally, then the truth.

- `store.py`: the room, in a store every server process reaches (SQLite in WAL mode on one machine, Redis for
  several); its rules (who may do what, in which phase) hold whichever store keeps it.
- `live.py`: one poller per process tells the sessions it serves when their room changed.
- `phone.py`: the page a student opens (`/join`): the current card's question and choices, a tap to choose.
- `projector.py`: the teacher's panel on a lesson page in presenter mode: the code, the QR code, the tally,
  the buttons that show, reveal, move and end.
"""
