package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller/httpapi"
	"github.com/ckpt/ckpt/internal/token"
	"github.com/ckpt/ckpt/internal/version"
	"github.com/spf13/cobra"
)

// serveLimits are the server's timeouts (a variable for tests).
var serveLimits = httpapi.DefaultLimits()

type serveOptions struct {
	addr        string
	tokenFile   string
	allowRemote bool
	token       string // filled from tokenFile, or random
	// hooks serves only the hook endpoint, at the store's hook server
	// address with its token (agent/hook); idle, if set, stops it after
	// that long without an event.
	hooks bool
	idle  time.Duration
}

func newServeCmd(a *app) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:  "serve",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.hooks {
				cfg, err := hook.ServerConfig(a.store)
				if err != nil {
					return err
				}
				if o.tokenFile != "" {
					return usagef("--token-file is the web API's token; --hooks takes the tokens ckpt install claude --http made")
				}
				if !cmd.Flags().Changed("addr") {
					o.addr = cfg.Addr
				}
			} else if o.idle != 0 {
				return usagef("--idle goes with --hooks")
			}
			if err := checkAddr(o.addr, o.allowRemote); err != nil {
				return err
			}
			var err error
			if o.token == "" && !o.hooks {
				if o.token, err = serveToken(o.tokenFile); err != nil {
					return err
				}
			}
			return a.serve(cmd.Context(), o, nil)
		},
	}
	cmd.Flags().BoolVar(&o.hooks, "hooks", false, "")
	cmd.Flags().DurationVar(&o.idle, "idle", 0, "")
	cmd.Flags().StringVar(&o.addr, "addr", "127.0.0.1:0", "")
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "")
	cmd.Flags().BoolVar(&o.allowRemote, "allow-remote", false, "")
	return cmd
}

// checkAddr refuses, as a usage error, an address httpapi.CheckAddr
// refuses.
func checkAddr(addr string, allowRemote bool) error {
	var e *httpapi.AddrError
	switch err := httpapi.CheckAddr(addr, allowRemote); {
	case errors.As(err, &e) && e.NotLoopback:
		return usagef("--addr %v; use 127.0.0.1, [::1] or localhost, or --allow-remote to expose this session's files on the network", err)
	case err != nil:
		return usagef("--addr %v", err)
	}
	return nil
}

// serveToken reads the token from file (a usage error if it is not one),
// or makes a random one.
func serveToken(file string) (string, error) {
	if file == "" {
		return token.New()
	}
	t, err := token.ReadFile(file)
	if err != nil {
		return "", usageError{err}
	}
	return t, nil
}

// serve listens on o.addr and serves until ctx is cancelled. ready, when
// not nil, receives the bound URL once listening.
func (a *app) serve(ctx context.Context, o serveOptions, ready chan<- string) error {
	if err := checkAddr(o.addr, o.allowRemote); err != nil {
		return err
	}
	if o.allowRemote && !o.hooks && token.Bits(o.token) < token.MinBits {
		return usagef("--allow-remote needs a token of at least %d bits", token.MinBits)
	}
	srv := &httpapi.Server{Addr: o.addr, AllowRemote: o.allowRemote, Limits: serveLimits}
	url, remote, err := srv.Listen()
	var notLoopback *httpapi.NotLoopbackError
	if errors.As(err, &notLoopback) {
		return usagef("--addr %q %s", o.addr, notLoopback)
	}
	if err != nil {
		return err
	}
	if remote {
		a.say("ckpt: warning: --allow-remote: serving on %s, beyond this machine; whoever can reach it and holds the token can rewrite this workspace's files, and plain HTTP is not encrypted", srv.Bound())
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// Hook events take the tokens of the store's hook installs, each for
	// its own workspace, never this server's web token.
	hooks := hook.NewServer(a.hookHandler(), version.Read().String(), a.stderr)
	if o.hooks {
		hooks.Shutdown = stop
	}
	defer hooks.Close()
	srv.Handle("/hook/", hooks)
	if !o.hooks {
		c, err := a.open(ctx)
		if err != nil {
			srv.Close()
			return err
		}
		defer c.Close()
		srv.API(c, httpapi.Options{Token: o.token, Sessions: true})
	}
	if o.hooks {
		// The token stays in the store's hook-server.json.
		line, _ := json.Marshal(map[string]string{"url": url, "hook_url": url + "/hook/claude"})
		fmt.Fprintln(a.stdout, string(line))
		a.say("ckpt: serving agent hook events for store %s at %s; Ctrl-C stops", a.store, url)
	} else {
		line, _ := json.Marshal(map[string]string{"url": url, "token": o.token, "open_url": url + "/#token=" + o.token})
		fmt.Fprintln(a.stdout, string(line))
		a.say("ckpt: serving session %s at %s (open the open_url printed on stdout); Ctrl-C stops", a.session, url)
	}
	if ready != nil {
		ready <- url
	}
	// The hook server forgets idle sessions' controllers; with --idle,
	// no event for that long stops the server.
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		if hooks.Keep(ctx, o.idle) {
			a.say("ckpt: no hook event for %s; stopping", o.idle)
			stop()
		}
	}()
	err = srv.Serve(ctx)
	stop()
	<-swept
	return err
}
