//! The virtual clock: one driver of the gates ([`world`]) for the simulator and the tests, the
//! simulated server, store and threads it uses, and the article's model on top ([`model`]).

pub mod article_gate;
pub mod given;
pub mod home;
pub mod lanes;
pub mod model;
pub mod month;
pub mod server;
pub mod store;
pub mod world;

pub use self::article_gate::ArticleGate;
pub use self::given::{HeadersGiven, LaneGiven, LookupsGiven, SimCacheGiven, SimGiven, Split};
pub use self::lanes::SimLane;
pub use self::model::{simulate, Coordination, SimCache, SimOptions, SimReport};
pub use self::month::{MonthReport, SimQuotaGiven};
pub use self::world::Served;
