"""What to judge next: samplings of documents from runs (rounds, estimates, stop rules) and the
re-judging order of a fit's tasks (/next), over models/sampling."""
