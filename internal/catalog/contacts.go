package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"net/mail"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Contact is a responsible party of a catalog record (ISO 19115 CI_Responsibility).
type Contact struct {
	ID, RecordID                     uuid.UUID
	Role                             string
	Name, Email, Organization, Phone *string
	Extra                            map[string]any
	SortOrder                        int
}

// ContactRoles are the ISO 19115 CI_RoleCode values a contact's role is one of.
var ContactRoles = []string{"resourceProvider", "custodian", "owner", "user", "distributor", "originator", "pointOfContact",
	"principalInvestigator", "processor", "publisher", "author", "sponsor", "coAuthor", "collaborator", "editor",
	"mediator", "rightsHolder", "contributor", "funder", "stakeholder"}

// ContactPatch is a partial change of a contact: the members present in the request change (a
// present nil clears), the others stay.
type ContactPatch struct {
	Contact
	Present map[string]bool
}

// check applies the rules of a contact as it is to be stored.
func (c Contact) check() error {
	if !slices.Contains(ContactRoles, c.Role) {
		return apperr.Unprocessable("role %q is not an ISO 19115 role code (%s)", c.Role, strings.Join(ContactRoles, ", "))
	}
	if blank(c.Name) && blank(c.Organization) {
		return apperr.Unprocessable("a contact needs a name or an organization")
	}
	if c.Email != nil {
		if a, err := mail.ParseAddress(*c.Email); err != nil || a.Address != *c.Email || a.Name != "" {
			return apperr.Unprocessable("email %q is not an e-mail address", *c.Email)
		}
	}
	if c.SortOrder < 0 || c.SortOrder > 9999 {
		return apperr.Unprocessable("sort_order: 0 to 9999")
	}
	return nil
}

func blank(s *string) bool { return s == nil || strings.TrimSpace(*s) == "" }

func contactOf(r store.CatalogRecordContact, record uuid.UUID) Contact {
	c := Contact{ID: r.ID, RecordID: record, Role: r.Role, Name: r.Name, Email: r.Email, Organization: r.Organization,
		Phone: r.Phone, SortOrder: int(r.SortOrder)}
	if len(r.ExtraJson) > 0 {
		_ = json.Unmarshal(r.ExtraJson, &c.Extra)
	}
	return c
}

func extraJSON(m map[string]any) []byte {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}

// Contacts lists a record's contacts in their order (sort_order, then creation).
func (s *Service) Contacts(ctx context.Context, p auth.Principal, recordID uuid.UUID, skip, limit int) ([]Contact, int, error) {
	d, err := s.recordDataset(ctx, s.Q, p, recordID, false)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListRecordContacts(ctx, store.ListRecordContactsParams{DatasetID: d.row.ID, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	return listPage(rows, skip, func(r store.ListRecordContactsRow) int64 { return r.Total },
		func() (int64, error) { return s.Q.CountRecordContacts(ctx, d.row.ID) },
		func(r store.ListRecordContactsRow) Contact { return contactOf(r.CatalogRecordContact, d.row.RecordID) })
}

// AddContact adds a contact to a record the caller may change: a new version with a history entry.
func (s *Service) AddContact(ctx context.Context, p auth.Principal, recordID uuid.UUID, c Contact) (Contact, error) {
	if err := c.check(); err != nil {
		return Contact{}, err
	}
	err := s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		r, err := q.AddRecordContact(ctx, store.AddRecordContactParams{DatasetID: d.row.ID, Role: c.Role, Name: c.Name, Email: c.Email,
			Organization: c.Organization, Phone: c.Phone, ExtraJson: extraJSON(c.Extra), SortOrder: int32(c.SortOrder)})
		if err != nil {
			return err
		}
		c = contactOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionContactAdd, map[string]any{"contacts": change(nil, c)})
	})
	return c, err
}

// UpdateContact applies a partial change to a contact of a record the caller may change.
func (s *Service) UpdateContact(ctx context.Context, p auth.Principal, recordID, contactID uuid.UUID, ch ContactPatch) (Contact, error) {
	var out Contact
	err := s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		cur, err := q.GetRecordContact(ctx, store.GetRecordContactParams{ID: contactID, DatasetID: d.row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("contact %s not found on this record", contactID)
		}
		if err != nil {
			return err
		}
		before := contactOf(cur, d.row.RecordID)
		next := ch.merge(before)
		if err := next.check(); err != nil {
			return err
		}
		r, err := q.UpdateRecordContact(ctx, store.UpdateRecordContactParams{ID: contactID, DatasetID: d.row.ID, Role: next.Role,
			Name: next.Name, Email: next.Email, Organization: next.Organization, Phone: next.Phone,
			ExtraJson: extraJSON(next.Extra), SortOrder: int32(next.SortOrder)})
		if err != nil {
			return err
		}
		out = contactOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionContactUpdate, map[string]any{"contacts": change(before, out)})
	})
	return out, err
}

// merge is cur with the patch's present members applied (a role sent as null becomes empty,
// which check refuses).
func (ch ContactPatch) merge(cur Contact) Contact {
	next, in := cur, ch.Present
	patch(in["role"], &next.Role, ch.Role)
	patch(in["name"], &next.Name, ch.Name)
	patch(in["email"], &next.Email, ch.Email)
	patch(in["organization"], &next.Organization, ch.Organization)
	patch(in["phone"], &next.Phone, ch.Phone)
	patch(in["extra_json"], &next.Extra, ch.Extra)
	patch(in["sort_order"], &next.SortOrder, ch.SortOrder)
	return next
}

// patch sets *dst to v when the member was present in the request.
func patch[T any](present bool, dst *T, v T) {
	if present {
		*dst = v
	}
}

// DeleteContact removes a contact from a record the caller may change.
func (s *Service) DeleteContact(ctx context.Context, p auth.Principal, recordID, contactID uuid.UUID) error {
	return s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		who, err := q.DeleteRecordContact(ctx, store.DeleteRecordContactParams{ID: contactID, DatasetID: d.row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("contact %s not found on this record", contactID)
		}
		if err != nil {
			return err
		}
		return touch(ctx, q, p, d.row.ID, ActionContactRemove, map[string]any{"contacts": change(who, nil)})
	})
}
