"""Releases' interfaces: the admin's release page of a prompt, the release
and label admins, and the API (the rules are ``tooling.releases``')."""
