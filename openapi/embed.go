// Package openapi embeds the contract, openapi.yaml, so the binary serves and validates against
// exactly the document it was built from.
//
// gen/ also embeds a copy (oapi-codegen's embedded-spec), but oapi-codegen rewrites operationIds
// into Go names there ("getMe" becomes "GetMe"); clients and SDK generators key on the original
// operationIds, so the server uses this copy instead.
package openapi

import (
	_ "embed"

	"github.com/getkin/kin-openapi/openapi3"
)

// YAML is openapi.yaml as written.
//
//go:embed openapi.yaml
var YAML []byte

// Load parses the embedded document. Each call returns a fresh copy that the caller may modify.
func Load() (*openapi3.T, error) {
	return openapi3.NewLoader().LoadFromData(YAML)
}
