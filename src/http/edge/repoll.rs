//! A connection that wakes itself while it is polled is polled again at once, on the same
//! thread, instead of being queued and handed to another worker.
//!
//! hyper's request body is a channel from the connection's dispatcher to the handler, and both
//! run in the connection's one task: when the handler takes the body's bytes, the channel wakes
//! the dispatcher, that is, the task that is running. tokio answers a task woken while it runs
//! by queueing it behind the worker's other tasks and waking a parked worker to share them
//! (`yield_now` in its scheduler). On a lightly loaded gateway that parked worker then takes
//! the I/O driver, and the provider's answer lands on it: one request, two cores, two
//! cross-thread wake-ups more (BENCHMARKS.md, "A connection that wakes itself"). Every
//! HTTP/1.1 request with a body does this once. (An HTTP/2 stream runs in a task of its own,
//! which hyper spawns, and its body comes from the connection's task: a wake from another
//! task, not this one.)
//!
//! [`Repoll`] gives the connection's future a waker of its own. A wake that comes while the
//! future is being polled (from itself, or from another thread at that moment) is noted, and
//! the future is polled again right away, as hyper's own dispatcher loops instead of waking
//! itself. A wake between polls goes to the task's waker as before. So that a future that
//! keeps waking itself cannot hold its worker, it is polled at most [`IN_PLACE`] times in a
//! row; after that its task is woken the usual way and queued behind the others.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

/// The most polls in a row one poll of the task makes of the future.
pub(super) const IN_PLACE: usize = 4;

/// Not being polled: a wake goes to the task.
const IDLE: u8 = 0;
/// Being polled, not woken yet.
const POLLING: u8 = 1;
/// Woken while being polled: poll it again when this poll returns.
const WOKEN: u8 = 2;

pin_project_lite::pin_project! {
    /// A future polled again in place when it is woken during its own poll (see the module
    /// docs).
    pub(super) struct Repoll<F> {
        #[pin]
        future: F,
        wakes: Arc<Wakes>,
        waker: Waker,
    }
}

/// Where the future's wakes go: noted while it is polled, to the task otherwise.
struct Wakes {
    state: AtomicU8,
    task: AtomicWaker,
}

impl<F> Repoll<F> {
    pub(super) fn new(future: F) -> Self {
        let wakes = Arc::new(Wakes {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
        });
        Repoll {
            future,
            waker: Waker::from(Arc::clone(&wakes)),
            wakes,
        }
    }
}

impl<F: Future> Future for Repoll<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        this.wakes.task.register(cx.waker());
        let mut inner = Context::from_waker(this.waker);
        for _ in 0..IN_PLACE {
            this.wakes.state.store(POLLING, Ordering::Release);
            let polled = this.future.as_mut().poll(&mut inner);
            // Back to idle first: a wake from now on goes to the task, so none is lost
            // between reading the state and returning.
            let woken = this.wakes.state.swap(IDLE, Ordering::AcqRel) == WOKEN;
            if polled.is_ready() || !woken {
                return polled;
            }
        }
        // Still waking itself: its turn is over, the scheduler queues it behind the others.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(WOKEN) => {}
            Err(_) => self.task.wake(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A task's waker that counts its wakes.
    #[derive(Default)]
    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A future that wakes itself during its first `self_wakes` polls, then finishes.
    struct WakesItself {
        self_wakes: usize,
        polls: usize,
    }

    impl Future for WakesItself {
        type Output = usize;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls += 1;
            if self.polls <= self.self_wakes {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(self.polls)
            }
        }
    }

    fn poll_once<F: Future + Unpin>(
        future: &mut Repoll<F>,
        task: &Arc<Counted>,
    ) -> Poll<F::Output> {
        let waker = Waker::from(Arc::clone(task));
        Pin::new(future).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn a_future_that_wakes_itself_is_polled_again_without_waking_its_task() {
        let task = Arc::new(Counted::default());
        let mut future = Repoll::new(WakesItself {
            self_wakes: 1,
            polls: 0,
        });
        assert_eq!(poll_once(&mut future, &task), Poll::Ready(2));
        assert_eq!(task.0.load(Ordering::SeqCst), 0, "the task was not woken");
    }

    #[test]
    fn one_that_keeps_waking_itself_goes_back_to_the_scheduler() {
        let task = Arc::new(Counted::default());
        let mut future = Repoll::new(WakesItself {
            self_wakes: 100,
            polls: 0,
        });
        assert_eq!(poll_once(&mut future, &task), Poll::Pending);
        assert_eq!(future.future.polls, IN_PLACE);
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            1,
            "queued again, not dropped"
        );
        // Each turn of the task polls it up to IN_PLACE times more.
        for _ in 0..100 / IN_PLACE {
            let _ = poll_once(&mut future, &task);
        }
        assert_eq!(future.future.polls, 101);
    }

    #[test]
    fn a_wake_between_polls_wakes_the_task() {
        let task = Arc::new(Counted::default());
        let mut future = Repoll::new(std::future::pending::<()>());
        assert_eq!(poll_once(&mut future, &task), Poll::Pending);
        let waker = future.waker.clone();
        std::thread::spawn(move || waker.wake()).join().unwrap();
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        // A waker kept from a poll before the task moved wakes it where it is now.
        let moved = Arc::new(Counted::default());
        assert_eq!(poll_once(&mut future, &moved), Poll::Pending);
        future.waker.wake_by_ref();
        assert_eq!(moved.0.load(Ordering::SeqCst), 1);
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_channel_inside_one_task_and_wakes_from_other_tasks_still_arrive() {
        // The case this is for: a receiver and its sender polled by one task, as hyper's
        // dispatcher and a handler reading the body are, so each send wakes the task that is
        // running; and a wake from another task between polls.
        let (to_self, mut from_self) = tokio::sync::mpsc::channel::<u64>(1);
        let (to_later, mut later) = tokio::sync::mpsc::channel::<u64>(1);
        let handle = tokio::spawn(Repoll::new(async move {
            let send = async move {
                for i in 0..1000 {
                    to_self.send(i).await.unwrap();
                }
            };
            let receive = async move {
                let mut sum = 0;
                while let Some(i) = from_self.recv().await {
                    sum += i;
                }
                sum
            };
            let ((), sum) = tokio::join!(send, receive);
            sum + later.recv().await.unwrap()
        }));
        tokio::task::yield_now().await;
        to_later.send(1).await.unwrap();
        assert_eq!(handle.await.unwrap(), 499_500 + 1);
    }
}
