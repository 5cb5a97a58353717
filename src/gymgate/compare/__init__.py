"""Where comparison happens: a baseline run and a candidate run reduced to one category per path."""
