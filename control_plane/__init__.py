"""p4aqm control plane: encoding, golden model, P4Runtime session, controller and CLI."""
