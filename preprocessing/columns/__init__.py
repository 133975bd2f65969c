"""A table's columns in pass 1 and in deciding their kinds, a module a kind, named as in dataformat (and in
trainer/columns/, which needs no `dates`): `numeric`, `categorical`, `dates` and `text`. Each holds how a block
of its kind is counted and how a column of its kind is described from its counts (its statistics, vocabulary or
format). preprocessing/column_counts.py counts a block of any column with them, before its kind is known;
preprocessing/column_kinds.py gives each column its kind."""
