"""A table's columns as a network's inputs, a module a kind, named as in dataformat and preprocessing:
`numeric`, `categorical` and `text`, with `crosses` for hashed crosses of their indices. A date column
has no module here: its features are numbers and categories, read by `numeric` and `categorical`."""
