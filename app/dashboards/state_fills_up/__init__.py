"""Dashboard "The state fills up": the state matrix of one model, token by token, in two modes.

- mechanism: readable tokens (name:number, name?, ·) with random unit vectors and gates from the two
  knobs (`app.mechanism.run_sequence`), so a beginner sees a phone book being written and read;
- trained: a shipped checkpoint (`app.checkpoints`) stepped token by token over one MQAR example
  (Arora et al. 2023), with the model's prediction at every query.

`model.py` holds the store (the controls, the run for them, its colour ranges) and every number the
pictures show (`head_frame`); it imports no Panel. `view.py` arranges the page, `pictures.py` draws
the cards of one head, `texts.py` writes the token strips, answers and notices.
"""
