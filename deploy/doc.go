// Package deploy holds extractq's deployment manifests (Kustomize for Kubernetes, Helm values,
// Grafana) and the tests that check them. It is a separate Go module so that the main module
// carries no Kubernetes dependencies.
package deploy
