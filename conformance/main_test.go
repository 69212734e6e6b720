package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"meridian/gen"
	"meridian/openapi"
)

// The suite shares one server over one fresh database; tests that need their own (outage,
// configuration) start one more.
var (
	adminDBURL string
	server     *Server
	contract   *Contract
	client     *gen.ClientWithResponses
	httpc      *http.Client // validating client for raw requests
	mails      *mailbox     // receives the mail the shared server sends
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("conformance: skipped in -short mode (needs PostgreSQL)")
		os.Exit(0)
	}
	adminDBURL = os.Getenv("TEST_DATABASE_URL")
	if adminDBURL == "" {
		fmt.Fprintln(os.Stderr, "conformance: TEST_DATABASE_URL is not set; run `make test` or `make test-conformance`")
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer RemoveBinary()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbURL, err := CreateDatabase(ctx, adminDBURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance: create database:", err)
		return 1
	}
	defer func() { _ = DropDatabase(context.Background(), adminDBURL, dbURL) }()
	mb, err := startMailbox()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance: mailbox:", err)
		return 1
	}
	defer mb.srv.Close()
	mails = mb
	env := []string{"RATE_LIMIT_ENABLED=false", "SMTP_HOST=127.0.0.1",
		fmt.Sprintf("SMTP_PORT=%d", mb.port), "SMTP_STARTTLS=never", "MAPTILER_API_KEY=mt-env-secret-value"}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		// Benchmarks stand for many clients but all send from this one address as one anonymous
		// client: a client's share of requests would measure the share, not the server.
		env = append(env, "CLIENT_MAX_IN_FLIGHT=0")
	}
	server, err = Start(ctx, dbURL, env...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	defer server.Stop()
	// Feature editing is off on a fresh server (enable_dataset_editing defaults to false); the
	// suite's editing tests run with it on, as an admin would switch it.
	if err := putSettingsAt(server.APIRoot, map[string]any{"enable_dataset_editing": true}); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: switch feature editing on:", err)
		return 1
	}

	doc, err := openapi.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance: load contract:", err)
		return 1
	}
	contract, err = NewContract(doc, server.APIRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	httpc = contract.Client()
	client, err = gen.NewClientWithResponses(server.APIRoot, gen.WithHTTPClient(httpc))
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}

	code := m.Run()

	all, done := contract.OperationIDs(), contract.Exercised()
	fmt.Printf("conformance: exercised %d of %d operations, every response validated against the contract\n", len(done), len(all))
	fmt.Printf("conformance: exercised: %s\n", strings.Join(done, " "))
	if code != 0 {
		fmt.Fprintf(os.Stderr, "server log (tail):\n%s\n", tail(server.Logs(), 4000))
	}
	return code
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// putSettingsAt writes settings through Update Settings as the first admin of the server at root.
func putSettingsAt(root string, settings map[string]any) error {
	res, err := http.PostForm(root+"/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}})
	if err != nil {
		return err
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(res.Body).Decode(&tok)
	res.Body.Close()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"settings": settings})
	req, _ := http.NewRequest(http.MethodPut, root+"/settings/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT /settings/: %s", res.Status)
	}
	return nil
}
