"""Extensions of Tool Form that only a Command Handle understands, one module each.

They read values the application gives the call (``ctx.application``), which
the model's arguments cannot reach. ``_registry`` builds the tables.
"""
