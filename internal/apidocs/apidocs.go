// Package apidocs serves the contract: the document as JSON and YAML, and a Redoc page for people.
// Redoc comes from npm (pinned in package.json) and is embedded, so the page needs no CDN.
package apidocs

import (
	"embed"
	"encoding/json"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

//go:embed assets/redoc.standalone.js
var assets embed.FS

const page = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Meridian API</title>
<style>body{margin:0;padding:0}</style>
</head>
<body>
<redoc spec-url="openapi.json" hide-download-button="false"></redoc>
<script src="docs/redoc.standalone.js"></script>
</body>
</html>
`

// Register adds GET/HEAD routes under base (e.g. /api): openapi.json, openapi.yaml, docs.
func Register(e *echo.Echo, base string, doc *openapi3.T, yaml []byte) error {
	js, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	get := func(path string, h echo.HandlerFunc) {
		e.GET(base+path, h)
		e.HEAD(base+path, h)
	}
	// The server's root is for people: it leads to the documentation (no web UI is served yet).
	root := func(c echo.Context) error { return c.Redirect(http.StatusFound, base+"/docs") }
	e.GET("/", root)
	e.HEAD("/", root)
	get("/openapi.json", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/vnd.oai.openapi+json;version=3.0", js)
	})
	get("/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/vnd.oai.openapi;version=3.0", yaml)
	})
	get("/docs", func(c echo.Context) error {
		// Relative URLs in the page resolve against /api/, so serve it there without a redirect.
		return c.HTML(http.StatusOK, page)
	})
	get("/docs/redoc.standalone.js", func(c echo.Context) error {
		b, err := assets.ReadFile("assets/redoc.standalone.js")
		if err != nil {
			return err
		}
		c.Response().Header().Set("Cache-Control", "public, max-age=86400")
		return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", b)
	})
	return nil
}
