/**
 * The turn a conversation's next turn takes once its events are archived: archived turns are
 * not in `events`, and a turn recorded meanwhile must not take their numbers again (a restore
 * would put two turns 0 side by side). Archives made before this column have none.
 */
export const archivedTurns = `
ALTER TABLE archives ADD COLUMN next_turn_index int;
`
