"""kailab's commands, one module per group: each parses its options, opens the lab, makes one call, renders."""
