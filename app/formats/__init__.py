"""Pure parsers and writers of the file formats (no database, no HTTP): shared by the service
and the offline CLI, so both read a file the same way."""
