// Package migrations embeds the forward-only schema migrations run by golang-migrate at start-up.
// sqlc reads the same *.up.sql files as its schema.
package migrations

import "embed"

// FS holds the migration files, named NNNNNN_title.up.sql.
//
//go:embed *.sql
var FS embed.FS
