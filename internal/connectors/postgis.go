package connectors

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/remote"
)

// PostGIS reads the tables with geometry of one schema of a PostgreSQL/PostGIS database
// elsewhere. It connects under the remote policy (host lists; private addresses only when
// REMOTE_ALLOW_PRIVATE), reads in a read-only transaction with a statement time limit, and
// hands each table over as GeoJSON in WGS 84; the password is used for the call only.
type PostGIS struct {
	Remote  *remote.Client
	Timeout time.Duration // per statement, and for connecting
}

func (PostGIS) Name() string        { return "postgis" }
func (PostGIS) DisplayName() string { return "PostGIS database" }

func (PostGIS) ConfigSchema() map[string]any {
	str := func(max int) map[string]any {
		return map[string]any{"type": "string", "minLength": 1, "maxLength": max}
	}
	return map[string]any{
		"type":     "object",
		"required": []any{"host", "database", "user"},
		"properties": map[string]any{
			"host":     str(253),
			"port":     map[string]any{"type": "integer", "minimum": 1, "maximum": 65535, "default": 5432},
			"database": str(63),
			"user":     str(63),
			"password": map[string]any{"type": "string", "maxLength": 1000, "writeOnly": true},
			"schema":   map[string]any{"type": "string", "minLength": 1, "maxLength": 63, "default": "public"},
			"sslmode":  map[string]any{"type": "string", "enum": []any{"disable", "require", "verify-full"}, "default": "require"},
		},
		"additionalProperties": false,
	}
}

// plainName: resource ids are table names of this shape (the contract's id pattern); tables
// named otherwise are not offered.
var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~-]{0,62}$`)

// Discover lists the schema's tables (and views) that have a geometry column.
func (c PostGIS) Discover(ctx context.Context, config map[string]any) ([]Resource, error) {
	var out []Resource
	err := c.read(ctx, config, func(tx pgx.Tx, schema string) error {
		rows, err := tx.Query(ctx, `SELECT f_table_name::text, f_geometry_column::text, type, srid,
			coalesce((SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(format('%I.%I', f_table_schema, f_table_name))), -1)
			FROM geometry_columns WHERE f_table_schema = $1 ORDER BY f_table_name, f_geometry_column`, schema)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for rows.Next() {
			var name, geom, typ string
			var srid int
			var estimate int64
			if err := rows.Scan(&name, &geom, &typ, &srid, &estimate); err != nil {
				return err
			}
			if !plainName.MatchString(name) || seen[name] { // one geometry column per table: the first
				continue
			}
			seen[name] = true
			md := map[string]any{"schema": schema, "geometry_column": geom, "geometry_type": typ, "srid": srid}
			if estimate >= 0 {
				md["estimated_rows"] = estimate
			}
			out = append(out, Resource{ID: name, Name: name, Kind: "table", Metadata: md})
		}
		return rows.Err()
	})
	return out, err
}

// Open streams the table as a GeoJSON FeatureCollection in WGS 84 (attributes as properties).
func (c PostGIS) Open(ctx context.Context, config map[string]any, res Resource) (string, io.ReadCloser, map[string]any, error) {
	geom, _ := res.Metadata["geometry_column"].(string)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(c.read(ctx, config, func(tx pgx.Tx, schema string) error {
			g := pgx.Identifier{"t", geom}.Sanitize()
			rows, err := tx.Query(ctx, `SELECT json_build_object('type', 'Feature',
				'geometry', ST_AsGeoJSON(CASE WHEN ST_SRID(`+g+`) IN (0, 4326) THEN `+g+` ELSE ST_Transform(`+g+`, 4326) END, 9)::json,
				'properties', to_jsonb(t) - $1::text)::text FROM `+pgx.Identifier{schema, res.ID}.Sanitize()+` t`, geom)
			if err != nil {
				return err
			}
			defer rows.Close()
			if _, err := io.WriteString(pw, `{"type":"FeatureCollection","features":[`); err != nil {
				return err
			}
			for n := 0; rows.Next(); n++ {
				var f string
				if err := rows.Scan(&f); err != nil {
					return err
				}
				if n > 0 {
					f = "," + f
				}
				if _, err := io.WriteString(pw, f); err != nil {
					return err
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
			_, err = io.WriteString(pw, "]}")
			return err
		}))
	}()
	cfg := settingsOf(config)
	source := map[string]any{"url": fmt.Sprintf("postgresql://%s@%s/%s", cfg.user, net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)), cfg.database),
		"connector": c.Name(), "schema": cfg.schema, "table": res.ID}
	return res.ID + ".geojson", pr, source, nil
}

type pgSettings struct {
	host, database, user, password, schema, sslmode string
	port                                            int
}

func settingsOf(config map[string]any) pgSettings {
	s := pgSettings{port: 5432, schema: "public", sslmode: "require"}
	s.host, _ = config["host"].(string)
	s.database, _ = config["database"].(string)
	s.user, _ = config["user"].(string)
	s.password, _ = config["password"].(string)
	if v, ok := config["schema"].(string); ok {
		s.schema = v
	}
	if v, ok := config["sslmode"].(string); ok {
		s.sslmode = v
	}
	if v, ok := config["port"].(float64); ok {
		s.port = int(v)
	}
	return s
}

// read runs fn in a read-only transaction on the configured database, connected through the
// remote policy's dialer.
func (c PostGIS) read(ctx context.Context, config map[string]any, fn func(pgx.Tx, string) error) error {
	s := settingsOf(config)
	cc, err := pgx.ParseConfig("")
	if err != nil {
		return err
	}
	// Everything is set here, nothing taken from the server's environment or password file:
	// those are the server's own credentials, never to be sent to a host a caller chose.
	cc.Host, cc.Port, cc.Database, cc.User, cc.Password = s.host, uint16(s.port), s.database, s.user, s.password
	cc.ConnectTimeout = c.Timeout
	cc.Fallbacks = nil
	switch s.sslmode {
	case "disable":
		cc.TLSConfig = nil
	case "verify-full":
		cc.TLSConfig = &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
	default: // require: encrypted, the certificate not checked
		cc.TLSConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // sslmode=require means exactly this
	}
	cc.DialFunc = c.Remote.Dial
	cc.RuntimeParams = map[string]string{"statement_timeout": strconv.FormatInt(c.Timeout.Milliseconds(), 10), "application_name": "meridian-connector"}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if errors.Is(err, remote.ErrRefused) {
		return apperr.Unprocessable("host %s: %v", s.host, err)
	}
	if err != nil {
		return &apperr.Error{Kind: apperr.KindUpstream, Title: "Bad Gateway", Detail: "connecting to " + s.host + " failed: " + err.Error()}
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(tx, s.schema)
	})
}
