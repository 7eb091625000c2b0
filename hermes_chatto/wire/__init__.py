"""The Chatto wire layer: ConnectRPC unary client, realtime protocol 2 client, frame
classification and the generated protobuf subset. Imports nothing from Hermes."""
