package settings

import (
	"context"
	"strings"
)

// PublicAddresses are the addresses an admin set for the web app (share links point there) and
// for the API (what the tile configuration tells clients), without a trailing slash; "" for
// each one not set, where the server's public base URL stands in.
func (r Reader) PublicAddresses(ctx context.Context) (app, api string, err error) {
	err = r.load(ctx, map[string]any{"general.public_app_url": &app, "general.public_api_url": &api})
	return strings.TrimRight(app, "/"), strings.TrimRight(api, "/"), err
}
