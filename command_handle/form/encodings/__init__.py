"""One module per item; the default table is built in command_handle.form._defaults."""
