"""kailab's lesson files: manifests/, exercises/ and runbooks/, shipped in the package.

Its subpackages are the repository's top-level folders, mapped in pyproject.toml
(``[tool.setuptools.package-dir]``): manifests/, exercises/, runbooks/. Read them through kailab.paths."""
