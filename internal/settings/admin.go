package settings

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"reflect"
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
	// Fixed are the values of the client keys the environment fixes (access_token_expire_minutes
	// ...), as the settings screen shows them.
	Fixed   map[string]any
	Changed func() // called after every write, for what keeps settings in memory
	Log     *slog.Logger
}

// Sources of a setting's value (Get All Settings).
const (
	SourceDefault    = "default"
	SourceOverridden = "overridden" // saved by an admin
	SourceEnvOnly    = "env_only"   // fixed by the environment; cannot be written here
)

// Item is a setting as the settings screen shows it.
type Item struct {
	Key, Label string
	Value      any
	Source     string // SourceDefault, SourceOverridden or SourceEnvOnly
}

// Actor is who changes settings, for the audit trail.
type Actor struct {
	ID       uuid.UUID
	Username string
	IP, UA   string
}

// stored reads every stored setting.
func (a Admin) stored(ctx context.Context) (map[string]json.RawMessage, error) {
	rows, err := a.Q.ListAllSettings(ctx)
	out := map[string]json.RawMessage{}
	for _, r := range rows {
		if string(r.Value) != "null" {
			out[r.Key] = r.Value
		}
	}
	return out, err
}

// effective is the value of a registry setting as JSON decodes it: stored, else its default.
func effective(stored map[string]json.RawMessage, key string) any {
	if raw, ok := stored[key]; ok {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			return v
		}
	}
	return decoded(defaults[key])
}

// All answers every setting by tab: the client tabs with exactly the client keys, then a tab per
// group of the registry settings no client key stands for, keyed by their full names. A secret's
// value is only whether it is set.
func (a Admin) All(ctx context.Context) (map[string][]Item, error) {
	stored, err := a.stored(ctx)
	if err != nil {
		return nil, err
	}
	tabs := map[string][]Item{}
	for _, t := range clientTabs {
		tabs[t] = []Item{}
	}
	for _, k := range clientKeys {
		tabs[k.Tab] = append(tabs[k.Tab], a.clientItem(k, stored))
	}
	skip := covered()
	for _, d := range registry {
		if skip[d.Key] {
			continue
		}
		group, _, _ := strings.Cut(d.Key, ".")
		it := Item{Key: d.Key, Label: d.Label, Source: SourceDefault, Value: effective(stored, d.Key)}
		if _, ok := stored[d.Key]; ok {
			it.Source = SourceOverridden
		}
		if _, pinned := a.Pinned[d.Key]; pinned {
			it.Source = SourceEnvOnly
		}
		if d.Secret {
			it.Key, it.Value = d.Key+"_set", it.Source != SourceDefault
		}
		tabs[ownTab(group)] = append(tabs[ownTab(group)], it)
	}
	return tabs, nil
}

func (a Admin) clientItem(k clientKey, stored map[string]json.RawMessage) Item {
	it := Item{Key: k.Key, Label: k.Label, Source: SourceDefault}
	if k.Env != "" {
		it.Source, it.Value = SourceEnvOnly, k.Default
		if v, ok := a.Fixed[k.Key]; ok {
			it.Value = v
		}
		return it
	}
	vals := make([]any, len(k.keys))
	for i, key := range k.keys {
		vals[i] = effective(stored, key)
		if _, ok := stored[key]; ok {
			it.Source = SourceOverridden
		}
		if _, pinned := a.Pinned[key]; pinned {
			it.Source = SourceEnvOnly
		}
	}
	it.Value = vals[0]
	if k.show != nil {
		it.Value = k.show(vals)
	}
	return it
}

// Update writes settings given as {key: value}: client keys (registration_enabled ...), registry
// keys by their full name (tile_config.max_concurrent), or a registry group with an object of its
// keys ({"tile_config": {"max_concurrent": 8}}). null returns a setting to its default. The
// whole body is validated first and written in one transaction, each change audited with its
// old and new value (a secret's: only that it changed).
func (a Admin) Update(ctx context.Context, actor Actor, body map[string]any) error {
	plan, err := a.Plan(ctx, body)
	if err != nil {
		return err
	}
	if len(plan.Restricted) > 0 {
		return apperr.Conflict("settings: %s is set by the environment and cannot be changed here", plan.Restricted[0])
	}
	err = pgx.BeginFunc(ctx, a.Pool, func(tx pgx.Tx) error { return a.Apply(ctx, a.Q.WithTx(tx), actor, plan) })
	a.changed()
	return err
}

// Plan is what an update would write: each registry key's new value (nil: its default) and
// current effective value, and the keys the environment pins, which it leaves out.
type Plan struct {
	Writes, Current map[string]any
	Restricted      []string
}

// Plan validates body as Update does and answers what it would write, writing nothing.
func (a Admin) Plan(ctx context.Context, body map[string]any) (Plan, error) {
	stored, err := a.stored(ctx)
	if err != nil {
		return Plan{}, err
	}
	writes := map[string]any{}
	for name, v := range body {
		if err := a.collect(writes, stored, name, v); err != nil {
			return Plan{}, err
		}
	}
	plan := Plan{Writes: map[string]any{}, Current: map[string]any{}, Restricted: []string{}}
	for key, v := range writes {
		d, ok := Lookup(key)
		if !ok {
			return Plan{}, apperr.Unprocessable("settings: %s is not a setting", key)
		}
		if _, pinned := a.Pinned[key]; pinned {
			plan.Restricted = append(plan.Restricted, key)
			continue
		}
		if v != nil {
			if err := d.Check(v); err != nil {
				return Plan{}, apperr.Unprocessable("settings: %s %v", key, err)
			}
		}
		plan.Writes[key], plan.Current[key] = v, effective(stored, key)
	}
	sort.Strings(plan.Restricted)
	return plan, nil
}

// Apply writes a plan inside the caller's transaction; the caller calls Changed after commit.
func (a Admin) Apply(ctx context.Context, q *store.Queries, actor Actor, plan Plan) error {
	keys := make([]string, 0, len(plan.Writes))
	for key := range plan.Writes {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		d, _ := Lookup(key)
		if err := a.put(ctx, q, actor, d, plan.Writes[key]); err != nil {
			return err
		}
	}
	return nil
}

// Groups are the effective values of every registry setting that is neither secret nor pinned
// by the environment, by group and key (the settings of a configuration document), and the
// pinned keys.
func (a Admin) Groups(ctx context.Context) (map[string]map[string]any, []string, error) {
	stored, err := a.stored(ctx)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]map[string]any{}
	var pinned []string
	for _, d := range registry {
		if _, ok := a.Pinned[d.Key]; ok {
			pinned = append(pinned, d.Key)
			continue
		}
		if d.Secret {
			continue
		}
		group, key, _ := strings.Cut(d.Key, ".")
		if out[group] == nil {
			out[group] = map[string]any{}
		}
		out[group][key] = effective(stored, d.Key)
	}
	sort.Strings(pinned)
	return out, pinned, nil
}

// Written tells what keeps settings in memory that they were written (after Apply's commit).
func (a Admin) Written() { a.changed() }

// collect turns one member of an update into writes of registry settings. Two members that
// write one setting differently are refused.
func (a Admin) collect(writes map[string]any, stored map[string]json.RawMessage, name string, v any) error {
	put := func(key string, v any) error {
		if prev, ok := writes[key]; ok && !reflect.DeepEqual(prev, v) {
			return apperr.Unprocessable("settings: %s is given two different values", key)
		}
		writes[key] = v
		return nil
	}
	obj, isObject := v.(map[string]any)
	k, isClient := clientKeyOf(name)
	switch {
	case isObject && isGroup(name) && name != "map_defaults":
		for sub, sv := range obj {
			if err := put(name+"."+sub, sv); err != nil {
				return err
			}
		}
		return nil
	case isClient && k.Env != "":
		return apperr.Conflict("settings: %s is set by the environment (%s) and cannot be changed here", name, k.Env)
	case isClient:
		if k.store == nil {
			return put(k.keys[0], v)
		}
		vals := make([]any, len(k.keys))
		for i, key := range k.keys {
			vals[i] = effective(stored, key)
		}
		out, err := k.store(v, vals)
		if err != nil {
			return apperr.Unprocessable("settings: %s %v", name, err)
		}
		for key, sv := range out {
			if err := put(key, sv); err != nil {
				return err
			}
		}
		return nil
	}
	if _, ok := Lookup(name); !ok {
		return apperr.Unprocessable("settings: %s is not a setting", name)
	}
	return put(name, v)
}

// isGroup tells whether name is a group of the registry (the part of a key before its dot).
func isGroup(name string) bool {
	return slices.ContainsFunc(registry, func(d Def) bool { return strings.HasPrefix(d.Key, name+".") })
}

func (a Admin) changed() {
	if a.Changed != nil {
		a.Changed()
	}
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
	if len(old) == 0 && (v == nil || (d.Secret && v == "")) {
		return nil // at its default already: nothing changes, nothing to audit
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

// Reset returns settings to their defaults. Each entry names a client tab ("general"), a client
// key ("registration_enabled"), a registry group ("tile_config") or a registry key
// ("tile_config.max_concurrent"); none means every setting. Secrets are reset only when named or
// their group is. What the environment sets keeps its value.
func (a Admin) Reset(ctx context.Context, actor Actor, keys []string) error {
	targets := map[string]bool{}
	for _, d := range registry {
		if len(keys) == 0 && !d.Secret {
			targets[d.Key] = true
		}
	}
	for _, name := range keys {
		found := false
		for _, d := range registry {
			if group, _, _ := strings.Cut(d.Key, "."); d.Key == name || group == name {
				targets[d.Key], found = true, true
			}
		}
		for _, k := range clientKeys {
			if k.Key == name || k.Tab == name {
				for _, key := range k.keys {
					targets[key] = true
				}
				found = true
			}
		}
		if !found && !slices.Contains(clientTabs, name) {
			return apperr.Unprocessable("settings: %s is neither a setting nor a group", name)
		}
	}
	ordered := make([]string, 0, len(targets))
	for key := range targets {
		if _, pinned := a.Pinned[key]; !pinned {
			ordered = append(ordered, key)
		}
	}
	sort.Strings(ordered)
	err := pgx.BeginFunc(ctx, a.Pool, func(tx pgx.Tx) error {
		q := a.Q.WithTx(tx)
		for _, key := range ordered {
			d, _ := Lookup(key)
			if err := a.put(ctx, q, actor, d, nil); err != nil {
				return err
			}
		}
		return nil
	})
	a.changed()
	return err
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
