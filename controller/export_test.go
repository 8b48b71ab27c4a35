package controller

import (
	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// SetBeforeReplace makes apply call fn just before it looks at a path for
// the last time and replaces or deletes it (tests of the race between a
// rewind's plan and its renames).
func SetBeforeReplace(c *Controller, fn func(rel string)) { c.beforeReplace = fn }

// SetRecoverHook makes Open's recovery of an interrupted rewind call fn
// with each file it looks at; nil removes it.
func SetRecoverHook(fn func(rel string)) { recoverHook = fn }

// Tests reach behind the API to set up states no front-end can make.
func IndexOf(c *Controller) *checkpoints.Index     { return c.idx }
func BlobsOf(c *Controller) *cas.Disk              { return c.store }
func WorkspaceOf(c *Controller) *capture.Workspace { return c.ws }
func StoreOf(c *Controller) *Store                 { return c.st }
