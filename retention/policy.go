package retention

import (
	"fmt"
	"sort"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/units"
)

// Policy says what to keep. The zero value keeps everything.
type Policy struct {
	MaxAge    time.Duration // prune turns older; remove sessions unused longer (0: no limit)
	KeepTurns int           // keep only the newest N turns per session (0: no limit)
	MaxBytes  int64         // store quota in bytes on disk, everything ckpt keeps (0: none)
	Grace     time.Duration // collection spares blobs younger than this
	// Session, when set, limits pruning to that session's turns: no other
	// session's turn is pruned and no session is removed. The quota is
	// still weighed against the whole store.
	Session string
	// InUse names a session open right now (the automatic retention of a
	// Controller opening it): it is never removed whole, however long it
	// was unused, though its old turns are pruned as any session's.
	InUse string
	// Reserve is bytes the quota's plan leaves free below MaxBytes: what
	// an earlier round's estimate of the bytes pruning frees fell short by
	// (controller.Store.Retain plans again when the store is still over).
	Reserve int64
}

// DefaultPolicy keeps 30 days, with no count limit and no quota.
func DefaultPolicy() Policy { return Policy{MaxAge: 30 * 24 * time.Hour} }

// Session is what Evaluate needs to know of one session.
type Session struct {
	ID      string
	LastUse time.Time
	Turns   []checkpoints.TurnRecord // in the order they were opened
	// Undo holds the blobs of the session's undo records: never pruned.
	Undo []cas.ID
	// IndexBytes is what the session's directory (its index) takes on
	// disk. It counts toward the quota; removing the session frees it,
	// and pruning a turn frees its snapshot rows' share of it (rowShare).
	IndexBytes int64
}

// Decision is the verdict on one turn, with the reason in words.
type Decision struct {
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	Hidden  bool   `json:"hidden"` // rewound out of the conversation
	Action  string `json:"action"` // "keep" or "prune"
	Reason  string `json:"reason"`
	TurnID  int64  `json:"-"`
}

// SessionDecision is the verdict on a whole session.
type SessionDecision struct {
	Session string `json:"session"`
	Action  string `json:"action"` // "keep" or "remove"
	Reason  string `json:"reason"`
}

// Plan is what a policy decides for a store.
type Plan struct {
	Sessions []SessionDecision `json:"sessions"`
	Turns    []Decision        `json:"turns"` // turns already pruned are left out
	// StoreBytes is what the store takes: on disk, as du counts it, when
	// the plan comes from PlanFor (blobs, SQLite files with their WALs,
	// session indexes, everything), else the blobs' stored bytes plus the
	// sessions' IndexBytes.
	StoreBytes int64 `json:"store_bytes"`
	// FreedBytes estimates what collection frees after the plan: the
	// stored size of blobs no longer referenced by anything kept.
	FreedBytes int64 `json:"freed_bytes"`
	// OverQuota is set when even the plan cannot bring the store under
	// MaxBytes (pinned turns, open turns and undo records are kept).
	OverQuota bool `json:"over_quota"`
}

// Prunes returns the turns the plan prunes, by session.
func (p Plan) Prunes() map[string][]int64 {
	out := map[string][]int64{}
	for _, d := range p.Turns {
		if d.Action == "prune" {
			out[d.Session] = append(out[d.Session], d.TurnID)
		}
	}
	return out
}

// Removes returns the sessions the plan removes whole.
func (p Plan) Removes() []string {
	var out []string
	for _, s := range p.Sessions {
		if s.Action == "remove" {
			out = append(out, s.Session)
		}
	}
	return out
}

// Evaluate applies the policy at time now to the sessions. blobs gives the
// stored size of every blob in the store (from cas Walk). It changes
// nothing, and explains every decision.
func Evaluate(p Policy, now time.Time, sessions []Session, blobs map[cas.ID]int64) Plan {
	return evaluate(p, now, sessions, blobs, nil, 0)
}

// evaluate is Evaluate with bases, the base of every blob stored as a
// delta, and other: the bytes the store takes on disk
// besides blob content and session directories (SQLite page overhead,
// WALs, object files' block rounding, config and locks). Pruning and
// collection are taken not to change it.
func evaluate(p Policy, now time.Time, sessions []Session, blobs map[cas.ID]int64, bases map[cas.ID]cas.ID, other int64) Plan {
	ev := &evaluation{p: p, now: now, sessions: sessions, blobs: blobs, bases: bases, other: other,
		plan:      Plan{StoreBytes: other},
		refs:      map[cas.ID]int{},
		firstKept: make([]int, len(sessions)),
		rowShare:  make([]int64, len(sessions)),
		decisions: make([][]Decision, len(sessions)),
	}
	for _, size := range blobs {
		ev.plan.StoreBytes += size
	}
	for _, s := range sessions {
		ev.plan.StoreBytes += s.IndexBytes
	}
	for si, s := range sessions {
		ev.ref(s.Undo, 1)
		switch {
		case p.Session != "" && s.ID != p.Session:
			ev.keepOther(si, s)
		case p.Session == "" && s.ID != p.InUse && p.MaxAge > 0 && !s.LastUse.IsZero() && now.Sub(s.LastUse) > p.MaxAge && !anyPinned(s.Turns):
			ev.removeWhole(si, s)
		default:
			ev.applyRules(si, s)
		}
	}
	// Quota: prune the oldest kept turns of the whole store until what
	// stays referenced fits.
	if p.MaxBytes > 0 && ev.live() > p.MaxBytes-p.Reserve {
		ev.enforceQuota()
	}
	for _, ds := range ev.decisions {
		ev.plan.Turns = append(ev.plan.Turns, ds...)
	}
	ev.plan.FreedBytes = ev.plan.StoreBytes - ev.live()
	return ev.plan
}

// evaluation is evaluate's state as it decides session by session.
type evaluation struct {
	p        Policy
	now      time.Time
	sessions []Session
	blobs    map[cas.ID]int64
	bases    map[cas.ID]cas.ID // a delta's base
	other    int64

	plan      Plan
	indexes   int64          // directories of the sessions kept
	refs      map[cas.ID]int // references from everything not yet pruned
	firstKept []int          // per session: index of the first turn kept
	rowShare  []int64        // per session: index bytes a snapshot row frees (rowShare)
	decisions [][]Decision   // per session
}

// ref adds d to the references of each of ids. A blob stored as a delta
// holds its base: the base is referenced while the delta is, since
// collection keeps it for reading the delta.
func (ev *evaluation) ref(ids []cas.ID, d int) {
	for _, id := range ids {
		if d > 0 {
			ev.hold(id)
		} else {
			ev.release(id)
		}
	}
}

// hold adds a reference to id, and to its base when id gains its first.
func (ev *evaluation) hold(id cas.ID) {
	for {
		ev.refs[id]++
		base, ok := ev.bases[id]
		if ev.refs[id] > 1 || !ok {
			return
		}
		id = base
	}
}

// release drops a reference to id and returns the stored bytes it frees:
// id's when that was its last, and so on down its chain of bases.
func (ev *evaluation) release(id cas.ID) (freed int64) {
	for {
		ev.refs[id]--
		if ev.refs[id] > 0 {
			return freed
		}
		freed += ev.blobs[id]
		base, ok := ev.bases[id]
		if !ok {
			return freed
		}
		id = base
	}
}

// live is what stays on disk: the other bytes, the kept sessions'
// directories and every blob still referenced.
func (ev *evaluation) live() int64 {
	n := ev.other + ev.indexes
	for id, c := range ev.refs {
		if c > 0 {
			n += ev.blobs[id]
		}
	}
	return n
}

// keepOther keeps session si and all its turns: the policy prunes another
// session only.
func (ev *evaluation) keepOther(si int, s Session) {
	reason := "only session " + ev.p.Session + " is pruned"
	ev.indexes += s.IndexBytes
	ev.plan.Sessions = append(ev.plan.Sessions, SessionDecision{Session: s.ID, Action: "keep", Reason: reason})
	ev.firstKept[si] = len(s.Turns)
	for _, t := range s.Turns {
		if !t.Pruned {
			ev.ref(t.Blobs, 1)
			ev.decisions[si] = append(ev.decisions[si], Decision{Session: s.ID, Turn: t.Number, Hidden: t.Hidden, TurnID: t.ID,
				Action: "keep", Reason: reason})
		}
	}
}

// removeWhole removes session si, unused for longer than the maximum age
// with nothing pinned, and so prunes all its turns.
func (ev *evaluation) removeWhole(si int, s Session) {
	ev.plan.Sessions = append(ev.plan.Sessions, SessionDecision{Session: s.ID, Action: "remove",
		Reason: fmt.Sprintf("unused for %s, longer than max age %s, nothing pinned", days(ev.now.Sub(s.LastUse)), days(ev.p.MaxAge))})
	ev.ref(s.Undo, -1)
	ev.firstKept[si] = len(s.Turns)
	for _, t := range s.Turns {
		if !t.Pruned {
			ev.decisions[si] = append(ev.decisions[si], Decision{Session: s.ID, Turn: t.Number, Hidden: t.Hidden, TurnID: t.ID,
				Action: "prune", Reason: "its session is removed"})
		}
	}
}

// applyRules keeps session si and prunes the turns before the first one
// the age and count rules keep (keepFrom).
func (ev *evaluation) applyRules(si int, s Session) {
	ev.indexes += s.IndexBytes
	ev.rowShare[si] = rowShare(s)
	ev.plan.Sessions = append(ev.plan.Sessions, SessionDecision{Session: s.ID, Action: "keep", Reason: "in use"})
	first, reasons := keepFrom(ev.p, ev.now, s.Turns)
	ev.firstKept[si] = first
	for i, t := range s.Turns {
		if t.Pruned {
			continue
		}
		d := Decision{Session: s.ID, Turn: t.Number, Hidden: t.Hidden, TurnID: t.ID, Reason: reasons[i]}
		if i < first {
			d.Action = "prune"
			ev.indexes -= ev.rowShare[si] * int64(len(t.Blobs))
		} else {
			d.Action = "keep"
			ev.ref(t.Blobs, 1)
		}
		ev.decisions[si] = append(ev.decisions[si], d)
	}
}

// quotaCand is a turn the quota may prune: sessions[session].Turns[turn].
type quotaCand struct {
	session int
	turn    int
}

// enforceQuota prunes the oldest kept turns of the whole store until what
// stays referenced fits under MaxBytes, and says whether it could not.
// Candidates are turns before each session's protected tail (pinned turn,
// open turn), oldest first; pruning one prunes every earlier kept turn of
// its session too.
func (ev *evaluation) enforceQuota() {
	var cands []quotaCand
	for si, s := range ev.sessions {
		limit := protectedFrom(s.Turns)
		for i := ev.firstKept[si]; i < limit; i++ {
			cands = append(cands, quotaCand{si, i})
		}
	}
	sessions := ev.sessions
	sort.SliceStable(cands, func(a, b int) bool {
		return sessions[cands[a].session].Turns[cands[a].turn].Time.Before(sessions[cands[b].session].Turns[cands[b].turn].Time)
	})
	used := ev.live()
	for _, c := range cands {
		if used <= ev.p.MaxBytes-ev.p.Reserve {
			break
		}
		used = ev.pruneThrough(c, used)
	}
	ev.plan.OverQuota = used > ev.p.MaxBytes-ev.p.Reserve
}

// pruneThrough prunes the kept turns of c's session up to c's turn, and
// returns used less the blobs no longer referenced.
func (ev *evaluation) pruneThrough(c quotaCand, used int64) int64 {
	s := ev.sessions[c.session]
	for i := ev.firstKept[c.session]; i <= c.turn; i++ {
		t := s.Turns[i]
		used -= ev.rowShare[c.session] * int64(len(t.Blobs))
		ev.indexes -= ev.rowShare[c.session] * int64(len(t.Blobs))
		for _, id := range t.Blobs {
			used -= ev.release(id)
		}
		ds := ev.decisions[c.session]
		for j := range ds {
			if ds[j].TurnID == t.ID {
				ds[j].Action = "prune"
				ds[j].Reason = fmt.Sprintf("store over quota %s: oldest turns go first", units.FormatBytes(ev.p.MaxBytes))
			}
		}
	}
	if c.turn+1 > ev.firstKept[c.session] {
		ev.firstKept[c.session] = c.turn + 1
	}
	return used
}

// rowShare estimates what one blob reference of a snapshot row of session
// s frees in its index when its turn is pruned: the index's bytes spread
// over its turns and references, at most refBytes. Most of an index is
// turns, the conversation and the change log, which pruning keeps, so
// counting all of it as freed would prune too little; counting none of it
// made a quota over many small turns prune nearly all of them. When the
// estimate falls short, Retain plans again on the compacted store.
func rowShare(s Session) int64 {
	refs := int64(len(s.Turns))
	for _, t := range s.Turns {
		if !t.Pruned {
			refs += int64(len(t.Blobs))
		}
	}
	if refs == 0 {
		return 0
	}
	return min(s.IndexBytes/refs, refBytes)
}

// refBytes is what a snapshot row takes in an index per blob it names:
// a row of about 100 bytes with its two index entries, naming two blobs
// (measured with SQLite's dbstat on an index of 10,000 rows).
const refBytes = 64

// keepFrom returns the index of the first turn the age and count rules keep
// (every later one is kept too) and the reason for each turn.
func keepFrom(p Policy, now time.Time, turns []checkpoints.TurnRecord) (int, []string) {
	n := len(turns)
	reasons := make([]string, n)
	first := 0
	if p.MaxAge > 0 {
		for first < n && now.Sub(turns[first].Time) > p.MaxAge {
			first++
		}
	}
	ageFirst := first
	if p.KeepTurns > 0 && n-p.KeepTurns > first {
		first = n - p.KeepTurns
	}
	protect := protectedFrom(turns)
	if first > protect {
		first = protect
	}
	for i, t := range turns {
		switch {
		case i >= first && t.Pinned:
			reasons[i] = "pinned"
		case i == protect && !t.Pinned || i >= protect && i == n-1:
			reasons[i] = "the open turn"
		case i >= protect:
			reasons[i] = "needed to rewind to a pinned turn"
		case i >= first:
			reasons[i] = "within max age and keep count"
		case i < ageFirst:
			reasons[i] = fmt.Sprintf("older than max age %s", days(p.MaxAge))
		default:
			reasons[i] = fmt.Sprintf("beyond the newest %d turns", p.KeepTurns)
		}
	}
	return first, reasons
}

// protectedFrom returns the index from which turns are never pruned: the
// first pinned turn (rewinding to it needs every later snapshot) or the
// open turn, whichever comes first. The open turn is the newest turn in
// the active history, not always the last opened: a conversation rewind
// hides the turns it cuts, and captures then go to the turn before them.
func protectedFrom(turns []checkpoints.TurnRecord) int {
	open := max(len(turns)-1, 0)
	for i := len(turns) - 1; i >= 0; i-- {
		if !turns[i].Hidden {
			open = i
			break
		}
	}
	for i, t := range turns[:open] {
		if t.Pinned {
			return i
		}
	}
	return open
}

func anyPinned(turns []checkpoints.TurnRecord) bool {
	for _, t := range turns {
		if t.Pinned {
			return true
		}
	}
	return false
}

func days(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	return d.Round(time.Minute).String()
}
