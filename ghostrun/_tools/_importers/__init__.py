"""Readers of other tools' cassettes, for ``ghostrun import`` (`_tools._import`).

    _source      what every reader returns: exchanges as they went over the wire
    _bounded     reading within replay's limits: file and body sizes, nesting, YAML aliases
    _vcrpy       vcrpy's cassettes (YAML, JSON, gzipped; pytest-recording's layout)
    _cassetter   cassetter's cassettes (YAML, TOML)

Each reader turns one file into a `_source.SourceFile`, or says why it cannot;
writing ghostrun cassettes from it is the command's. PyYAML is needed for YAML
files only (the ``import`` extra), imported when a YAML file is read.
"""
