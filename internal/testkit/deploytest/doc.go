// Package deploytest checks the SAM application offline: template.yaml under cfn-lint and the
// SAM transform, and its agreement with the code (config options, EMF metrics) and local files.
package deploytest
