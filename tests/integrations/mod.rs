//! Integrations with the real clients: krew, pre-commit, kustomize, kpt, kubectl.
