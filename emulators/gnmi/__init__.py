"""A gNMI server for the emulators: the protocol, with the data model behind a face."""
