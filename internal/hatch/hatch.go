// Package hatch lets this module's tests reach the parts behind a
// controller.Controller (its index, blob store, workspace and store) to
// set up states no front-end can make, such as a missing blob. Front-ends
// cannot import it: the controller's API is all they get. Package
// controller registers the accessor in its init; nothing else may.
package hatch

import (
	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// Parts are a Controller's insides.
type Parts struct {
	Index     *checkpoints.Index
	Blobs     *cas.Disk
	Workspace *capture.Workspace
	Store     any // the *controller.Store the session lives in
}

var of func(any) Parts

// Register sets the accessor; package controller calls it once.
func Register(f func(c any) Parts) { of = f }

// Of returns the parts of c, a *controller.Controller.
func Of(c any) Parts { return of(c) }
