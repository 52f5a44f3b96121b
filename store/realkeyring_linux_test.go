package store

import (
	"testing"

	ss "github.com/zalando/go-keyring/secret_service"
)

// secretServiceItemSizes lists the size of each Secret Service item of
// service, by user name.
func secretServiceItemSizes(t *testing.T, service string) map[string]int {
	t.Helper()
	svc, err := ss.NewSecretService()
	if err != nil {
		t.Fatal(err)
	}
	session, err := svc.OpenSession()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Close(session) }()
	collection := svc.GetLoginCollection()
	if err := svc.Unlock(collection.Path()); err != nil {
		t.Fatal(err)
	}
	items, err := svc.SearchItems(collection, map[string]string{"service": service})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, item := range items {
		attrs, err := svc.Object("org.freedesktop.secrets", item).GetProperty("org.freedesktop.Secret.Item.Attributes")
		if err != nil {
			t.Fatal(err)
		}
		m, _ := attrs.Value().(map[string]string)
		sec, err := svc.GetSecret(item, session.Path())
		if err != nil {
			t.Fatal(err)
		}
		sizes[m["username"]] = len(sec.Value)
	}
	if len(sizes) == 0 {
		t.Fatalf("no Secret Service item of %s", service)
	}
	return sizes
}
