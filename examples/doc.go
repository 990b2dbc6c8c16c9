// Package examples holds no code: it is the directory of ready-to-copy
// files that run `hostprep ready` from Ansible, cloud-init, systemd and CI
// (GitLab CI, GitHub Actions). examples_test.go checks them with the tools
// that run them (ansible-playbook --syntax-check, systemd-analyze verify),
// and checks their structure with yaml.v3; cmd/hostprep/examples_test.go
// checks that every hostprep flag they use exists.
package examples
