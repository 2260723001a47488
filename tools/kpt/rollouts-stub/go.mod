module github.com/kptdev/kpt/rollouts

go 1.24.0

require k8s.io/apimachinery v0.34.1
