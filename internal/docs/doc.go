// Package docs has no code: its test keeps README.md and docs/ honest
// (every relative link resolves, the README stays a front page).
package docs
