// Package openapi embeds the contract, openapi.yaml, so the binary serves exactly the document it
// was built from.
package openapi

import _ "embed"

// YAML is openapi.yaml as written.
//
//go:embed openapi.yaml
var YAML []byte
