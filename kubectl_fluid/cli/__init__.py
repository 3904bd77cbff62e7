"""The ``kubectl fluid`` plugin: click commands, one module per verb. Imports nothing heavy at start-up."""
