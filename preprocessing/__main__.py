from preprocessing.cli import cli

cli()
