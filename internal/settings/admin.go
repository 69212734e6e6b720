package settings

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/secretbox"
	"meridian/store"
)

// Admin reads and writes the settings for the settings screen: typed, validated, audited, with
// secrets sealed and never read back, and keys pinned by the environment reported and kept.
type Admin struct {
	Pool   *pgxpool.Pool
	Q      *store.Queries
	Box    *secretbox.Box
	Pinned map[string]string // key → value set by the environment (provider keys ...)
	Log    *slog.Logger
}

// Item is a setting as the settings screen shows it.
type Item struct {
	Key, Label string
	Value      any
	Source     string // default, database or environment
}

// Actor is who changes settings, for the audit trail.
type Actor struct {
	ID       uuid.UUID
	Username string
	IP, UA   string
}

// All answers every setting by group. A secret's value is only whether it is set.
func (a Admin) All(ctx context.Context) (map[string][]Item, error) {
	rows, err := a.Q.ListAllSettings(ctx)
	if err != nil {
		return nil, err
	}
	stored := map[string]json.RawMessage{}
	for _, r := range rows {
		stored[r.Key] = r.Value
	}
	tabs := map[string][]Item{}
	for _, d := range registry {
		group, name, _ := strings.Cut(d.Key, ".")
		it := Item{Key: name, Label: d.Label, Source: "default", Value: defaults[d.Key]}
		raw, inDB := stored[d.Key]
		if inDB && string(raw) != "null" {
			it.Source = "database"
			_ = json.Unmarshal(raw, &it.Value)
		}
		if _, pinned := a.Pinned[d.Key]; pinned {
			it.Source = "environment"
		}
		if d.Secret {
			it.Key, it.Value = name+"_set", it.Source != "default"
		}
		tabs[group] = append(tabs[group], it)
	}
	return tabs, nil
}

// Update writes settings: {group: {key: value}}, validated as a whole first and written in one
// transaction, each change audited with its old and new value (a secret's: only that it changed).
func (a Admin) Update(ctx context.Context, actor Actor, groups map[string]map[string]any) error {
	type write struct {
		def   Def
		value any
	}
	var writes []write
	for group, keys := range groups {
		for name, v := range keys {
			d, ok := Lookup(group + "." + name)
			if !ok {
				return apperr.Unprocessable("settings: %s.%s is not a setting", group, name)
			}
			if _, pinned := a.Pinned[d.Key]; pinned {
				return apperr.Conflict("settings: %s is set by the environment and cannot be changed here", d.Key)
			}
			if err := d.Check(v); err != nil {
				return apperr.Unprocessable("settings: %s %v", d.Key, err)
			}
			writes = append(writes, write{d, v})
		}
	}
	sort.Slice(writes, func(i, j int) bool { return writes[i].def.Key < writes[j].def.Key })
	return pgx.BeginFunc(ctx, a.Pool, func(tx pgx.Tx) error {
		q := a.Q.WithTx(tx)
		for _, w := range writes {
			if err := a.put(ctx, q, actor, w.def, w.value); err != nil {
				return err
			}
		}
		return nil
	})
}

// put writes one setting (null removes it: its default applies) and audits the change.
func (a Admin) put(ctx context.Context, q *store.Queries, actor Actor, d Def, v any) error {
	old, err := q.GetSettingsByKeys(ctx, []string{d.Key})
	if err != nil {
		return err
	}
	var before any
	if len(old) == 1 {
		_ = json.Unmarshal(old[0].Value, &before)
	}
	if v == nil || (d.Secret && v == "") {
		if _, err := q.DeleteSetting(ctx, d.Key); err != nil {
			return err
		}
	} else {
		stored := v
		if d.Secret {
			sealed, err := a.Box.Seal([]byte(v.(string)))
			if err != nil {
				return err
			}
			stored = base64.StdEncoding.EncodeToString(sealed)
		}
		raw, err := json.Marshal(stored)
		if err != nil {
			return err
		}
		if err := q.PutSetting(ctx, store.PutSettingParams{Key: d.Key, Value: raw, UpdatedBy: &actor.ID}); err != nil {
			return err
		}
	}
	detail := map[string]any{"old": before, "new": v}
	if d.Secret {
		detail = map[string]any{"was_set": before != nil, "is_set": v != nil && v != ""}
	}
	audit.Record(ctx, q, a.Log, audit.Entry{ActorID: actor.ID, ActorDisplay: actor.Username, Action: "settings.update",
		ResourceType: "setting", ResourceID: d.Key, IP: actor.IP, UA: actor.UA, Detail: detail})
	return nil
}

// Reset returns settings to their defaults: each entry a group ("tile_config") or a key
// ("tile_config.max_concurrent"); none means every group. Secrets are reset only when named or
// their group is. Keys pinned by the environment keep their value.
func (a Admin) Reset(ctx context.Context, actor Actor, keys []string) error {
	var targets []Def
	for _, d := range registry {
		group, _, _ := strings.Cut(d.Key, ".")
		named := slices.Contains(keys, d.Key) || slices.Contains(keys, group)
		if (len(keys) == 0 && !d.Secret) || named {
			targets = append(targets, d)
		}
	}
	for _, k := range keys {
		if !slices.ContainsFunc(registry, func(d Def) bool { g, _, _ := strings.Cut(d.Key, "."); return d.Key == k || g == k }) {
			return apperr.Unprocessable("settings: %s is neither a setting nor a group", k)
		}
	}
	return pgx.BeginFunc(ctx, a.Pool, func(tx pgx.Tx) error {
		q := a.Q.WithTx(tx)
		for _, d := range targets {
			if _, pinned := a.Pinned[d.Key]; pinned {
				continue
			}
			if err := a.put(ctx, q, actor, d, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// ProviderKeys are the third-party keys in use: the environment's, else the stored ones.
func (a Admin) ProviderKeys(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, pk := range providerKeys {
		if v := a.Pinned["provider_keys."+pk.Name]; v != "" {
			out[pk.Name] = v
		}
	}
	keys := make([]string, 0, len(providerKeys))
	for _, pk := range providerKeys {
		keys = append(keys, "provider_keys."+pk.Name)
	}
	rows, err := a.Q.GetSettingsByKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		name := strings.TrimPrefix(r.Key, "provider_keys.")
		if out[name] != "" {
			continue
		}
		var enc string
		_ = json.Unmarshal(r.Value, &enc)
		sealed, err := base64.StdEncoding.DecodeString(enc)
		var key []byte
		if err == nil {
			key, err = a.Box.Open(sealed)
		}
		if err != nil {
			// Sealed under another JWT_SECRET_KEY, or not written by Update Settings: the key
			// is unusable, which must not break what does not need it. Store it again.
			a.Log.Warn("settings: a stored provider key cannot be opened; set it again", "key", r.Key, "err", err)
			continue
		}
		out[name] = string(key)
	}
	return out, nil
}
