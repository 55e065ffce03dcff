import LarderStorage
import LarderValueFile
import Dispatch
import LarderStoreVocabulary

/// The expiry sweep: expired values already read as absent everywhere; this
/// removes their files (and reports `expire` changes) in the background, on
/// its own queue, never blocking a request.
extension DiskStore {
    /// The sweep runs at most this often.
    static let minimumSweepInterval: UInt64 = 50_000_000

    func startExpirySweep() {
        let timer = DispatchSource.makeTimerSource(queue: sweepQueue)
        timer.setEventHandler { [weak self] in self?.sweep() }
        timer.resume()
        sweepTimer = timer
        // The start-up scan filled the index before the timer existed: a
        // first sweep removes what is due and schedules the next one.
        sweepQueue.async { [weak self] in self?.sweep() }
    }

    /// Records the expiry of the write `version` of `key` (a recovered older
    /// write never replaces a newer one's).
    func noteExpiry(_ key: StoreKey, at expires: Int64, version: UInt64) {
        expiries.add(key, expires: expires, version: version) { scheduleSweep(at: $0) }
    }

    /// Called with the index's lock held, so two schedules never cross.
    func scheduleSweep(at nanos: Int64) {
        let delay = max(Self.minimumSweepInterval, UInt64(max(0, nanos - nowNanos())))
        sweepTimer?.schedule(deadline: .now() + .nanoseconds(Int(min(delay, UInt64(Int.max)))), leeway: .milliseconds(20))
    }

    func sweep() {
        let due = expiries.takeDue(now: nowNanos()) { scheduleSweep(at: $0) }
        for (key, version) in due {
            do { try removeIfExpired(key) } catch {
                logger.warning("expiry sweep: cannot remove \(key): \(error)")
            }
            expiries.settle(key, version: version)
        }
    }
}

extension DiskStore {
    /// Moves the clock, then sweeps on the sweep queue (which also
    /// reschedules the timer by the new time) and answers after it: the
    /// keys it passed are gone, with their `expire` changes, by the answer.
    public func moveClock(_ move: StoreClock.Move) -> StoreReply<StoreClock.Reading> {
        let reading: StoreClock.Reading
        do { reading = try clock.apply(move) } catch { return .now(.failure(error)) }
        return .later { pending in
            sweepQueue.async { [self] in
                sweep()
                pending.fulfil(.success(reading))
            }
        }
    }
}
