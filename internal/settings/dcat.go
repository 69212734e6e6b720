package settings

import (
	"context"
	"fmt"
	"regexp"
)

// The open-data feeds (DCAT, DCAT-US 3, GeoDCAT-AP, issue 31): what the catalog says of itself and
// of who publishes it, and the codes US federal harvesters ask of a DCAT-US catalog.
func init() {
	registry = append(registry,
		Def{Key: "dcat.catalog_title", Label: "Open-data catalog title (empty: the site name)", Check: anyText(500)},
		Def{Key: "dcat.catalog_description", Label: "Open-data catalog description", Check: anyText(5000)},
		Def{Key: "dcat.publisher_name", Label: "Publisher of the catalog and of datasets that name none (empty: the site name for the catalog)", Check: anyText(500)},
		Def{Key: "dcat.publisher_url", Label: "Publisher's IRI (its home page or registry entry)", Check: httpURL(true)},
		Def{Key: "dcat_us.bureau_codes", Label: "DCAT-US bureau codes of the publisher (OMB A-11, 015:11)", Check: codes(bureauCode)},
		Def{Key: "dcat_us.program_codes", Label: "DCAT-US program codes of the datasets (Federal Program Inventory, 015:001)", Check: codes(programCode)},
	)
	for k, v := range map[string]any{
		"dcat.catalog_title": "", "dcat.catalog_description": "", "dcat.publisher_name": "", "dcat.publisher_url": nil,
		"dcat_us.bureau_codes": []string{}, "dcat_us.program_codes": []string{},
	} {
		defaults[k] = v
	}
}

var (
	bureauCode  = regexp.MustCompile(`^\d{3}:\d{2}$`)
	programCode = regexp.MustCompile(`^\d{3}:\d{3}$`)
)

// codes checks a list of codes of one form.
func codes(form *regexp.Regexp) func(any) error {
	return func(v any) error {
		list, ok := v.([]any)
		if !ok || len(list) > 50 {
			return fmt.Errorf("must be a list of at most 50 codes such as %s", example(form))
		}
		for _, e := range list {
			if s, ok := e.(string); !ok || !form.MatchString(s) {
				return fmt.Errorf("must list codes such as %s (got %v)", example(form), e)
			}
		}
		return nil
	}
}

func example(form *regexp.Regexp) string {
	if form == bureauCode {
		return "015:11"
	}
	return "015:001"
}

// DCAT is what the open-data feeds say of the catalog and its publisher.
type DCAT struct {
	SiteName, CatalogTitle, CatalogDescription string
	PublisherName                              string
	PublisherURL                               *string
	BureauCodes, ProgramCodes                  []string
}

// DCAT reads the open-data feed settings in one query.
func (r Reader) DCAT(ctx context.Context) (DCAT, error) {
	var d DCAT
	err := r.load(ctx, map[string]any{"branding.site_name": &d.SiteName, "dcat.catalog_title": &d.CatalogTitle,
		"dcat.catalog_description": &d.CatalogDescription, "dcat.publisher_name": &d.PublisherName,
		"dcat.publisher_url": &d.PublisherURL, "dcat_us.bureau_codes": &d.BureauCodes, "dcat_us.program_codes": &d.ProgramCodes})
	return d, err
}
