package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
)

// A Go program serving a session's API and web page on loopback, as
// `ckpt serve` does, then calling the API as the page would. The handler
// drives the Controller it is given; Options.Sessions lists the sessions
// of the store the Controller was opened from.
func Example() {
	ctx := context.Background()
	workspace, _ := os.MkdirTemp("", "ckpt-example-ws-")
	store, _ := os.MkdirTemp("", "ckpt-example-store-")
	defer os.RemoveAll(workspace)
	defer os.RemoveAll(store)

	st := controller.OpenStore(store)
	defer st.Close()
	c, err := st.Open(ctx, controller.Options{Workspace: workspace})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.BeginTurn(ctx, "add a login page", controller.TurnOptions{}); err != nil {
		log.Fatal(err)
	}

	// A random 128-bit token; the page is opened at URL/#token=TOKEN.
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])

	// The API and page on loopback, with ckpt serve's timeouts, until
	// ctx ends.
	srv := &httpapi.Server{Addr: "127.0.0.1:0", Limits: httpapi.DefaultLimits()}
	url, _, err := srv.Listen()
	if err != nil {
		log.Fatal(err)
	}
	srv.API(c, httpapi.Options{Token: token, Sessions: true})
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go srv.Serve(ctx)

	req, _ := http.NewRequest("GET", url+"/api/checkpoints", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var turns []struct {
		Turn   int    `json:"turn"`
		Prompt string `json:"prompt"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&turns); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status)
	for _, t := range turns {
		fmt.Printf("turn %d: %s\n", t.Turn, t.Prompt)
	}
	// Output:
	// 200 OK
	// turn 0: add a login page
}
