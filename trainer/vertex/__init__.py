"""Everything about Vertex AI in one place: the folders and trial a job is given (environment),
job shapes and the machine catalog (jobs, catalog.yaml), and submission (submit)."""
