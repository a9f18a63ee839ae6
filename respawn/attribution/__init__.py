"""Attribution: the runbooks, the matcher over their patterns, and evidence read into a failure class, layer and nodes."""
