"""What a node of a host of several does for the others (hosts/engine/placement.py): the
channels it runs, fed to the nodes whose clients watch them (feeds.py); the channels another
node runs, mirrored here for this node's clients (mirrors.py); and the actions those clients
dispatch, applied by the node that runs the session (remote_clients.py)."""
