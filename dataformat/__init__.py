"""The dataset format every part of the project shares: the records and `metadata.json` (schema),
TFRecord framing, file operations on local disk or gs:// (storage, gcs), and the user-facing
errors and command-line edge that every command uses."""
