import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PresenceStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRESENCE_STATUS_UNSPECIFIED: _ClassVar[PresenceStatus]
    PRESENCE_STATUS_ONLINE: _ClassVar[PresenceStatus]
    PRESENCE_STATUS_AWAY: _ClassVar[PresenceStatus]
    PRESENCE_STATUS_DO_NOT_DISTURB: _ClassVar[PresenceStatus]
    PRESENCE_STATUS_OFFLINE: _ClassVar[PresenceStatus]

class RoomKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROOM_KIND_UNSPECIFIED: _ClassVar[RoomKind]
    ROOM_KIND_CHANNEL: _ClassVar[RoomKind]
    ROOM_KIND_DM: _ClassVar[RoomKind]

class RoomThreadingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROOM_THREADING_MODE_UNSPECIFIED: _ClassVar[RoomThreadingMode]
    ROOM_THREADING_MODE_REQUIRED: _ClassVar[RoomThreadingMode]
    ROOM_THREADING_MODE_ENCOURAGED: _ClassVar[RoomThreadingMode]
    ROOM_THREADING_MODE_ENABLED: _ClassVar[RoomThreadingMode]
    ROOM_THREADING_MODE_DISABLED: _ClassVar[RoomThreadingMode]

class RoomDirectoryScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROOM_DIRECTORY_SCOPE_UNSPECIFIED: _ClassVar[RoomDirectoryScope]
    ROOM_DIRECTORY_SCOPE_ALL: _ClassVar[RoomDirectoryScope]
    ROOM_DIRECTORY_SCOPE_CHANNELS: _ClassVar[RoomDirectoryScope]
    ROOM_DIRECTORY_SCOPE_DMS: _ClassVar[RoomDirectoryScope]

class RealtimeInitialState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REALTIME_INITIAL_STATE_UNSPECIFIED: _ClassVar[RealtimeInitialState]
    REALTIME_INITIAL_STATE_LIVE_ONLY: _ClassVar[RealtimeInitialState]
    REALTIME_INITIAL_STATE_SNAPSHOT: _ClassVar[RealtimeInitialState]

class RealtimeRecovery(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REALTIME_RECOVERY_UNSPECIFIED: _ClassVar[RealtimeRecovery]
    REALTIME_RECOVERY_RESUMED: _ClassVar[RealtimeRecovery]
    REALTIME_RECOVERY_SNAPSHOT: _ClassVar[RealtimeRecovery]
    REALTIME_RECOVERY_LIVE_ONLY: _ClassVar[RealtimeRecovery]

class RealtimeCloseCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REALTIME_CLOSE_CODE_UNSPECIFIED: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_INVALID_REQUEST: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_UNSUPPORTED_PROTOCOL: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_SESSION_RENEWAL_REQUIRED: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_RESYNC_REQUIRED: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_SESSION_TERMINATED: _ClassVar[RealtimeCloseCode]
    REALTIME_CLOSE_CODE_PRIVILEGED_MODE_EXPIRED: _ClassVar[RealtimeCloseCode]

class AssetUploadStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ASSET_UPLOAD_STATUS_UNSPECIFIED: _ClassVar[AssetUploadStatus]
    ASSET_UPLOAD_STATUS_OPEN: _ClassVar[AssetUploadStatus]
    ASSET_UPLOAD_STATUS_COMPLETED: _ClassVar[AssetUploadStatus]
    ASSET_UPLOAD_STATUS_CANCELLED: _ClassVar[AssetUploadStatus]
PRESENCE_STATUS_UNSPECIFIED: PresenceStatus
PRESENCE_STATUS_ONLINE: PresenceStatus
PRESENCE_STATUS_AWAY: PresenceStatus
PRESENCE_STATUS_DO_NOT_DISTURB: PresenceStatus
PRESENCE_STATUS_OFFLINE: PresenceStatus
ROOM_KIND_UNSPECIFIED: RoomKind
ROOM_KIND_CHANNEL: RoomKind
ROOM_KIND_DM: RoomKind
ROOM_THREADING_MODE_UNSPECIFIED: RoomThreadingMode
ROOM_THREADING_MODE_REQUIRED: RoomThreadingMode
ROOM_THREADING_MODE_ENCOURAGED: RoomThreadingMode
ROOM_THREADING_MODE_ENABLED: RoomThreadingMode
ROOM_THREADING_MODE_DISABLED: RoomThreadingMode
ROOM_DIRECTORY_SCOPE_UNSPECIFIED: RoomDirectoryScope
ROOM_DIRECTORY_SCOPE_ALL: RoomDirectoryScope
ROOM_DIRECTORY_SCOPE_CHANNELS: RoomDirectoryScope
ROOM_DIRECTORY_SCOPE_DMS: RoomDirectoryScope
REALTIME_INITIAL_STATE_UNSPECIFIED: RealtimeInitialState
REALTIME_INITIAL_STATE_LIVE_ONLY: RealtimeInitialState
REALTIME_INITIAL_STATE_SNAPSHOT: RealtimeInitialState
REALTIME_RECOVERY_UNSPECIFIED: RealtimeRecovery
REALTIME_RECOVERY_RESUMED: RealtimeRecovery
REALTIME_RECOVERY_SNAPSHOT: RealtimeRecovery
REALTIME_RECOVERY_LIVE_ONLY: RealtimeRecovery
REALTIME_CLOSE_CODE_UNSPECIFIED: RealtimeCloseCode
REALTIME_CLOSE_CODE_INVALID_REQUEST: RealtimeCloseCode
REALTIME_CLOSE_CODE_UNSUPPORTED_PROTOCOL: RealtimeCloseCode
REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE: RealtimeCloseCode
REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED: RealtimeCloseCode
REALTIME_CLOSE_CODE_SESSION_RENEWAL_REQUIRED: RealtimeCloseCode
REALTIME_CLOSE_CODE_RESYNC_REQUIRED: RealtimeCloseCode
REALTIME_CLOSE_CODE_SESSION_TERMINATED: RealtimeCloseCode
REALTIME_CLOSE_CODE_PRIVILEGED_MODE_EXPIRED: RealtimeCloseCode
ASSET_UPLOAD_STATUS_UNSPECIFIED: AssetUploadStatus
ASSET_UPLOAD_STATUS_OPEN: AssetUploadStatus
ASSET_UPLOAD_STATUS_COMPLETED: AssetUploadStatus
ASSET_UPLOAD_STATUS_CANCELLED: AssetUploadStatus

class User(_message.Message):
    __slots__ = ("id", "login", "display_name", "deleted", "avatar_url", "presence_status", "bot")
    ID_FIELD_NUMBER: _ClassVar[int]
    LOGIN_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    AVATAR_URL_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_STATUS_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    id: str
    login: str
    display_name: str
    deleted: bool
    avatar_url: str
    presence_status: PresenceStatus
    bot: BotInfo
    def __init__(self, id: _Optional[str] = ..., login: _Optional[str] = ..., display_name: _Optional[str] = ..., deleted: _Optional[bool] = ..., avatar_url: _Optional[str] = ..., presence_status: _Optional[_Union[PresenceStatus, str]] = ..., bot: _Optional[_Union[BotInfo, _Mapping]] = ...) -> None: ...

class BotInfo(_message.Message):
    __slots__ = ("owner_user_id",)
    OWNER_USER_ID_FIELD_NUMBER: _ClassVar[int]
    owner_user_id: str
    def __init__(self, owner_user_id: _Optional[str] = ...) -> None: ...

class PermissionGrant(_message.Message):
    __slots__ = ("permission", "granted")
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    permission: str
    granted: bool
    def __init__(self, permission: _Optional[str] = ..., granted: _Optional[bool] = ...) -> None: ...

class ServerViewerPermissions(_message.Message):
    __slots__ = ("permissions",)
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    permissions: _containers.RepeatedCompositeFieldContainer[PermissionGrant]
    def __init__(self, permissions: _Optional[_Iterable[_Union[PermissionGrant, _Mapping]]] = ...) -> None: ...

class ViewerUser(_message.Message):
    __slots__ = ("profile",)
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    profile: User
    def __init__(self, profile: _Optional[_Union[User, _Mapping]] = ...) -> None: ...

class DirectoryMember(_message.Message):
    __slots__ = ("user", "roles", "created_at")
    USER_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    user: User
    roles: _containers.RepeatedScalarFieldContainer[str]
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., roles: _Optional[_Iterable[str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Room(_message.Message):
    __slots__ = ("id", "kind", "name", "description", "archived", "group_id", "universal", "slow_mode_seconds", "threading_mode", "thread_slow_mode_seconds")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    UNIVERSAL_FIELD_NUMBER: _ClassVar[int]
    SLOW_MODE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    THREADING_MODE_FIELD_NUMBER: _ClassVar[int]
    THREAD_SLOW_MODE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: RoomKind
    name: str
    description: str
    archived: bool
    group_id: str
    universal: bool
    slow_mode_seconds: int
    threading_mode: RoomThreadingMode
    thread_slow_mode_seconds: int
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[RoomKind, str]] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., archived: _Optional[bool] = ..., group_id: _Optional[str] = ..., universal: _Optional[bool] = ..., slow_mode_seconds: _Optional[int] = ..., threading_mode: _Optional[_Union[RoomThreadingMode, str]] = ..., thread_slow_mode_seconds: _Optional[int] = ...) -> None: ...

class RoomSummary(_message.Message):
    __slots__ = ("id", "kind", "name")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: RoomKind
    name: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[RoomKind, str]] = ..., name: _Optional[str] = ...) -> None: ...

class RoomViewerState(_message.Message):
    __slots__ = ("is_member", "has_unread", "permissions", "slow_mode_next_post_at")
    IS_MEMBER_FIELD_NUMBER: _ClassVar[int]
    HAS_UNREAD_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    SLOW_MODE_NEXT_POST_AT_FIELD_NUMBER: _ClassVar[int]
    is_member: bool
    has_unread: bool
    permissions: _containers.RepeatedCompositeFieldContainer[PermissionGrant]
    slow_mode_next_post_at: _timestamp_pb2.Timestamp
    def __init__(self, is_member: _Optional[bool] = ..., has_unread: _Optional[bool] = ..., permissions: _Optional[_Iterable[_Union[PermissionGrant, _Mapping]]] = ..., slow_mode_next_post_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RoomWithViewerState(_message.Message):
    __slots__ = ("room", "viewer_state", "member_user_ids")
    ROOM_FIELD_NUMBER: _ClassVar[int]
    VIEWER_STATE_FIELD_NUMBER: _ClassVar[int]
    MEMBER_USER_IDS_FIELD_NUMBER: _ClassVar[int]
    room: Room
    viewer_state: RoomViewerState
    member_user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, room: _Optional[_Union[Room, _Mapping]] = ..., viewer_state: _Optional[_Union[RoomViewerState, _Mapping]] = ..., member_user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class MessageAssetUrl(_message.Message):
    __slots__ = ("url", "expires_at")
    URL_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    url: str
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, url: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MessageAttachment(_message.Message):
    __slots__ = ("id", "filename", "content_type", "width", "height", "asset_url", "thumbnail_asset_url")
    ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    THUMBNAIL_ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    id: str
    filename: str
    content_type: str
    width: int
    height: int
    asset_url: MessageAssetUrl
    thumbnail_asset_url: MessageAssetUrl
    def __init__(self, id: _Optional[str] = ..., filename: _Optional[str] = ..., content_type: _Optional[str] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., asset_url: _Optional[_Union[MessageAssetUrl, _Mapping]] = ..., thumbnail_asset_url: _Optional[_Union[MessageAssetUrl, _Mapping]] = ...) -> None: ...

class MessageReaction(_message.Message):
    __slots__ = ("emoji", "count", "has_reacted", "preview_user_ids")
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    HAS_REACTED_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_USER_IDS_FIELD_NUMBER: _ClassVar[int]
    emoji: str
    count: int
    has_reacted: bool
    preview_user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, emoji: _Optional[str] = ..., count: _Optional[int] = ..., has_reacted: _Optional[bool] = ..., preview_user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ThreadViewerState(_message.Message):
    __slots__ = ("is_following", "has_unread_replies")
    IS_FOLLOWING_FIELD_NUMBER: _ClassVar[int]
    HAS_UNREAD_REPLIES_FIELD_NUMBER: _ClassVar[int]
    is_following: bool
    has_unread_replies: bool
    def __init__(self, is_following: _Optional[bool] = ..., has_unread_replies: _Optional[bool] = ...) -> None: ...

class ThreadSummary(_message.Message):
    __slots__ = ("thread_root_event_id", "reply_count", "last_reply_at", "participant_preview_user_ids", "participant_count", "viewer_state")
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REPLY_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_REPLY_AT_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANT_PREVIEW_USER_IDS_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANT_COUNT_FIELD_NUMBER: _ClassVar[int]
    VIEWER_STATE_FIELD_NUMBER: _ClassVar[int]
    thread_root_event_id: str
    reply_count: int
    last_reply_at: _timestamp_pb2.Timestamp
    participant_preview_user_ids: _containers.RepeatedScalarFieldContainer[str]
    participant_count: int
    viewer_state: ThreadViewerState
    def __init__(self, thread_root_event_id: _Optional[str] = ..., reply_count: _Optional[int] = ..., last_reply_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., participant_preview_user_ids: _Optional[_Iterable[str]] = ..., participant_count: _Optional[int] = ..., viewer_state: _Optional[_Union[ThreadViewerState, _Mapping]] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("id", "room_id", "created_at", "actor_id", "body", "attachments", "updated_at", "in_reply_to", "thread_root_event_id", "echo_of_event_id", "echo_from_thread_root_event_id", "channel_echo_event_id", "reactions", "thread", "deleted_at", "pinned")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    IN_REPLY_TO_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ECHO_OF_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ECHO_FROM_THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ECHO_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REACTIONS_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    DELETED_AT_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    id: str
    room_id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    body: str
    attachments: _containers.RepeatedCompositeFieldContainer[MessageAttachment]
    updated_at: _timestamp_pb2.Timestamp
    in_reply_to: str
    thread_root_event_id: str
    echo_of_event_id: str
    echo_from_thread_root_event_id: str
    channel_echo_event_id: str
    reactions: _containers.RepeatedCompositeFieldContainer[MessageReaction]
    thread: ThreadSummary
    deleted_at: _timestamp_pb2.Timestamp
    pinned: bool
    def __init__(self, id: _Optional[str] = ..., room_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., body: _Optional[str] = ..., attachments: _Optional[_Iterable[_Union[MessageAttachment, _Mapping]]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., in_reply_to: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., echo_of_event_id: _Optional[str] = ..., echo_from_thread_root_event_id: _Optional[str] = ..., channel_echo_event_id: _Optional[str] = ..., reactions: _Optional[_Iterable[_Union[MessageReaction, _Mapping]]] = ..., thread: _Optional[_Union[ThreadSummary, _Mapping]] = ..., deleted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pinned: _Optional[bool] = ...) -> None: ...

class RoomMessagePosted(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class RoomTimelineRoomEvent(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class RoomTimelineCallEvent(_message.Message):
    __slots__ = ("room_id", "call_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    call_id: str
    def __init__(self, room_id: _Optional[str] = ..., call_id: _Optional[str] = ...) -> None: ...

class RoomTimelineEvent(_message.Message):
    __slots__ = ("id", "created_at", "actor_id", "message_posted", "room_created", "room_updated", "room_deleted", "room_archived", "room_unarchived", "user_joined_room", "user_left_room", "call_started", "call_ended")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_POSTED_FIELD_NUMBER: _ClassVar[int]
    ROOM_CREATED_FIELD_NUMBER: _ClassVar[int]
    ROOM_UPDATED_FIELD_NUMBER: _ClassVar[int]
    ROOM_DELETED_FIELD_NUMBER: _ClassVar[int]
    ROOM_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    ROOM_UNARCHIVED_FIELD_NUMBER: _ClassVar[int]
    USER_JOINED_ROOM_FIELD_NUMBER: _ClassVar[int]
    USER_LEFT_ROOM_FIELD_NUMBER: _ClassVar[int]
    CALL_STARTED_FIELD_NUMBER: _ClassVar[int]
    CALL_ENDED_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    message_posted: RoomMessagePosted
    room_created: RoomTimelineRoomEvent
    room_updated: RoomTimelineRoomEvent
    room_deleted: RoomTimelineRoomEvent
    room_archived: RoomTimelineRoomEvent
    room_unarchived: RoomTimelineRoomEvent
    user_joined_room: RoomTimelineRoomEvent
    user_left_room: RoomTimelineRoomEvent
    call_started: RoomTimelineCallEvent
    call_ended: RoomTimelineCallEvent
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., message_posted: _Optional[_Union[RoomMessagePosted, _Mapping]] = ..., room_created: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_updated: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_deleted: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_archived: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_unarchived: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., user_joined_room: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., user_left_room: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., call_started: _Optional[_Union[RoomTimelineCallEvent, _Mapping]] = ..., call_ended: _Optional[_Union[RoomTimelineCallEvent, _Mapping]] = ...) -> None: ...

class RoomTimelineIncludes(_message.Message):
    __slots__ = ("users",)
    class UsersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: User
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[User, _Mapping]] = ...) -> None: ...
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.MessageMap[str, User]
    def __init__(self, users: _Optional[_Mapping[str, User]] = ...) -> None: ...

class RoomTimelinePage(_message.Message):
    __slots__ = ("events", "start_cursor", "end_cursor", "has_older", "has_newer", "includes")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    START_CURSOR_FIELD_NUMBER: _ClassVar[int]
    END_CURSOR_FIELD_NUMBER: _ClassVar[int]
    HAS_OLDER_FIELD_NUMBER: _ClassVar[int]
    HAS_NEWER_FIELD_NUMBER: _ClassVar[int]
    INCLUDES_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[RoomTimelineEvent]
    start_cursor: str
    end_cursor: str
    has_older: bool
    has_newer: bool
    includes: RoomTimelineIncludes
    def __init__(self, events: _Optional[_Iterable[_Union[RoomTimelineEvent, _Mapping]]] = ..., start_cursor: _Optional[str] = ..., end_cursor: _Optional[str] = ..., has_older: _Optional[bool] = ..., has_newer: _Optional[bool] = ..., includes: _Optional[_Union[RoomTimelineIncludes, _Mapping]] = ...) -> None: ...

class ServerPublicProfile(_message.Message):
    __slots__ = ("name", "version", "logo_url", "banner_url", "welcome_message", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LOGO_URL_FIELD_NUMBER: _ClassVar[int]
    BANNER_URL_FIELD_NUMBER: _ClassVar[int]
    WELCOME_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    logo_url: str
    banner_url: str
    welcome_message: str
    description: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., logo_url: _Optional[str] = ..., banner_url: _Optional[str] = ..., welcome_message: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class ServerRuntimeConfig(_message.Message):
    __slots__ = ("max_upload_size", "message_edit_window_seconds")
    MAX_UPLOAD_SIZE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EDIT_WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    max_upload_size: int
    message_edit_window_seconds: int
    def __init__(self, max_upload_size: _Optional[int] = ..., message_edit_window_seconds: _Optional[int] = ...) -> None: ...

class GetServerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerResponse(_message.Message):
    __slots__ = ("profile",)
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    profile: ServerPublicProfile
    def __init__(self, profile: _Optional[_Union[ServerPublicProfile, _Mapping]] = ...) -> None: ...

class GetViewerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetViewerResponse(_message.Message):
    __slots__ = ("user", "viewer_permissions")
    USER_FIELD_NUMBER: _ClassVar[int]
    VIEWER_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    user: ViewerUser
    viewer_permissions: ServerViewerPermissions
    def __init__(self, user: _Optional[_Union[ViewerUser, _Mapping]] = ..., viewer_permissions: _Optional[_Union[ServerViewerPermissions, _Mapping]] = ...) -> None: ...

class ListRoomsRequest(_message.Message):
    __slots__ = ("scope",)
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    scope: RoomDirectoryScope
    def __init__(self, scope: _Optional[_Union[RoomDirectoryScope, str]] = ...) -> None: ...

class ListRoomsResponse(_message.Message):
    __slots__ = ("rooms",)
    ROOMS_FIELD_NUMBER: _ClassVar[int]
    rooms: _containers.RepeatedCompositeFieldContainer[RoomWithViewerState]
    def __init__(self, rooms: _Optional[_Iterable[_Union[RoomWithViewerState, _Mapping]]] = ...) -> None: ...

class GetRoomRequest(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class GetRoomResponse(_message.Message):
    __slots__ = ("room",)
    ROOM_FIELD_NUMBER: _ClassVar[int]
    room: RoomWithViewerState
    def __init__(self, room: _Optional[_Union[RoomWithViewerState, _Mapping]] = ...) -> None: ...

class StartDMRequest(_message.Message):
    __slots__ = ("participant_ids",)
    PARTICIPANT_IDS_FIELD_NUMBER: _ClassVar[int]
    participant_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, participant_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class StartDMResponse(_message.Message):
    __slots__ = ("room",)
    ROOM_FIELD_NUMBER: _ClassVar[int]
    room: Room
    def __init__(self, room: _Optional[_Union[Room, _Mapping]] = ...) -> None: ...

class CreateMessageRequest(_message.Message):
    __slots__ = ("room_id", "body", "attachment_asset_ids", "thread_root_event_id", "in_reply_to", "also_send_to_channel", "link_preview_token", "create_thread")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENT_ASSET_IDS_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IN_REPLY_TO_FIELD_NUMBER: _ClassVar[int]
    ALSO_SEND_TO_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    LINK_PREVIEW_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CREATE_THREAD_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    body: str
    attachment_asset_ids: _containers.RepeatedScalarFieldContainer[str]
    thread_root_event_id: str
    in_reply_to: str
    also_send_to_channel: bool
    link_preview_token: str
    create_thread: bool
    def __init__(self, room_id: _Optional[str] = ..., body: _Optional[str] = ..., attachment_asset_ids: _Optional[_Iterable[str]] = ..., thread_root_event_id: _Optional[str] = ..., in_reply_to: _Optional[str] = ..., also_send_to_channel: _Optional[bool] = ..., link_preview_token: _Optional[str] = ..., create_thread: _Optional[bool] = ...) -> None: ...

class CreateMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class UpdateMessageRequest(_message.Message):
    __slots__ = ("room_id", "event_id", "body", "also_send_to_channel")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    ALSO_SEND_TO_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_id: str
    body: str
    also_send_to_channel: bool
    def __init__(self, room_id: _Optional[str] = ..., event_id: _Optional[str] = ..., body: _Optional[str] = ..., also_send_to_channel: _Optional[bool] = ...) -> None: ...

class UpdateMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class DeleteMessageRequest(_message.Message):
    __slots__ = ("room_id", "event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_id: str
    def __init__(self, room_id: _Optional[str] = ..., event_id: _Optional[str] = ...) -> None: ...

class DeleteMessageResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMessageRequest(_message.Message):
    __slots__ = ("room_id", "event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_id: str
    def __init__(self, room_id: _Optional[str] = ..., event_id: _Optional[str] = ...) -> None: ...

class GetMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class GetThreadEventsRequest(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id", "limit", "before", "after")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    limit: int
    before: str
    after: str
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., limit: _Optional[int] = ..., before: _Optional[str] = ..., after: _Optional[str] = ...) -> None: ...

class GetThreadEventsResponse(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: RoomTimelinePage
    def __init__(self, page: _Optional[_Union[RoomTimelinePage, _Mapping]] = ...) -> None: ...

class GetThreadEventsAroundRequest(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id", "event_id", "limit")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    event_id: str
    limit: int
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., event_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class GetThreadEventsAroundResponse(_message.Message):
    __slots__ = ("page", "target_index")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    TARGET_INDEX_FIELD_NUMBER: _ClassVar[int]
    page: RoomTimelinePage
    target_index: int
    def __init__(self, page: _Optional[_Union[RoomTimelinePage, _Mapping]] = ..., target_index: _Optional[int] = ...) -> None: ...

class GetRoomEventsRequest(_message.Message):
    __slots__ = ("room_id", "limit", "before", "after")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    limit: int
    before: str
    after: str
    def __init__(self, room_id: _Optional[str] = ..., limit: _Optional[int] = ..., before: _Optional[str] = ..., after: _Optional[str] = ...) -> None: ...

class GetRoomEventsResponse(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: RoomTimelinePage
    def __init__(self, page: _Optional[_Union[RoomTimelinePage, _Mapping]] = ...) -> None: ...

class RefreshTypingIndicatorRequest(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ...) -> None: ...

class RefreshTypingIndicatorResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BatchGetMessagesRequest(_message.Message):
    __slots__ = ("room_id", "event_ids")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_IDS_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, room_id: _Optional[str] = ..., event_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class BatchGetMessagesResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    def __init__(self, messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ...) -> None: ...

class SetPresenceRequest(_message.Message):
    __slots__ = ("status", "user_selected")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    USER_SELECTED_FIELD_NUMBER: _ClassVar[int]
    status: PresenceStatus
    user_selected: bool
    def __init__(self, status: _Optional[_Union[PresenceStatus, str]] = ..., user_selected: _Optional[bool] = ...) -> None: ...

class SetPresenceResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: PresenceStatus
    def __init__(self, status: _Optional[_Union[PresenceStatus, str]] = ...) -> None: ...

class RefreshPresenceRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PresencePreference(_message.Message):
    __slots__ = ("status", "revision")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    status: PresenceStatus
    revision: str
    def __init__(self, status: _Optional[_Union[PresenceStatus, str]] = ..., revision: _Optional[str] = ...) -> None: ...

class RefreshPresenceResponse(_message.Message):
    __slots__ = ("preference",)
    PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    preference: PresencePreference
    def __init__(self, preference: _Optional[_Union[PresencePreference, _Mapping]] = ...) -> None: ...

class BotApiKey(_message.Message):
    __slots__ = ("id", "name", "created_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Bot(_message.Message):
    __slots__ = ("user", "owner_user_id", "created_at", "api_keys")
    USER_FIELD_NUMBER: _ClassVar[int]
    OWNER_USER_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    API_KEYS_FIELD_NUMBER: _ClassVar[int]
    user: User
    owner_user_id: str
    created_at: _timestamp_pb2.Timestamp
    api_keys: _containers.RepeatedCompositeFieldContainer[BotApiKey]
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., owner_user_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., api_keys: _Optional[_Iterable[_Union[BotApiKey, _Mapping]]] = ...) -> None: ...

class CreateBotApiKeyRequest(_message.Message):
    __slots__ = ("bot_user_id", "name")
    BOT_USER_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    bot_user_id: str
    name: str
    def __init__(self, bot_user_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CreateBotApiKeyResponse(_message.Message):
    __slots__ = ("bot", "api_key", "api_key_metadata")
    BOT_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    API_KEY_METADATA_FIELD_NUMBER: _ClassVar[int]
    bot: Bot
    api_key: str
    api_key_metadata: BotApiKey
    def __init__(self, bot: _Optional[_Union[Bot, _Mapping]] = ..., api_key: _Optional[str] = ..., api_key_metadata: _Optional[_Union[BotApiKey, _Mapping]] = ...) -> None: ...

class RevokeBotApiKeyRequest(_message.Message):
    __slots__ = ("bot_user_id", "key_id")
    BOT_USER_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    bot_user_id: str
    key_id: str
    def __init__(self, bot_user_id: _Optional[str] = ..., key_id: _Optional[str] = ...) -> None: ...

class RevokeBotApiKeyResponse(_message.Message):
    __slots__ = ("bot",)
    BOT_FIELD_NUMBER: _ClassVar[int]
    bot: Bot
    def __init__(self, bot: _Optional[_Union[Bot, _Mapping]] = ...) -> None: ...

class AddReactionRequest(_message.Message):
    __slots__ = ("room_id", "message_event_id", "emoji")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    message_event_id: str
    emoji: str
    def __init__(self, room_id: _Optional[str] = ..., message_event_id: _Optional[str] = ..., emoji: _Optional[str] = ...) -> None: ...

class AddReactionResponse(_message.Message):
    __slots__ = ("added", "reaction")
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REACTION_FIELD_NUMBER: _ClassVar[int]
    added: bool
    reaction: MessageReaction
    def __init__(self, added: _Optional[bool] = ..., reaction: _Optional[_Union[MessageReaction, _Mapping]] = ...) -> None: ...

class RemoveReactionRequest(_message.Message):
    __slots__ = ("room_id", "message_event_id", "emoji")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    message_event_id: str
    emoji: str
    def __init__(self, room_id: _Optional[str] = ..., message_event_id: _Optional[str] = ..., emoji: _Optional[str] = ...) -> None: ...

class RemoveReactionResponse(_message.Message):
    __slots__ = ("removed", "reaction")
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    REACTION_FIELD_NUMBER: _ClassVar[int]
    removed: bool
    reaction: MessageReaction
    def __init__(self, removed: _Optional[bool] = ..., reaction: _Optional[_Union[MessageReaction, _Mapping]] = ...) -> None: ...

class BatchGetUsersRequest(_message.Message):
    __slots__ = ("user_ids",)
    USER_IDS_FIELD_NUMBER: _ClassVar[int]
    user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class BatchGetUsersResponse(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[DirectoryMember]
    def __init__(self, users: _Optional[_Iterable[_Union[DirectoryMember, _Mapping]]] = ...) -> None: ...

class GetUserRequest(_message.Message):
    __slots__ = ("user_id", "login")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    LOGIN_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    login: str
    def __init__(self, user_id: _Optional[str] = ..., login: _Optional[str] = ...) -> None: ...

class GetUserResponse(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: DirectoryMember
    def __init__(self, user: _Optional[_Union[DirectoryMember, _Mapping]] = ...) -> None: ...

class NotificationMessageReference(_message.Message):
    __slots__ = ("room", "event_id", "thread_root_event_id")
    ROOM_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room: RoomSummary
    event_id: str
    thread_root_event_id: str
    def __init__(self, room: _Optional[_Union[RoomSummary, _Mapping]] = ..., event_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ...) -> None: ...

class DirectMessageReceived(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class DirectMentionReceived(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class ReplyReceived(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class RoleMentionReceived(_message.Message):
    __slots__ = ("message", "role_names")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ROLE_NAMES_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    role_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ..., role_names: _Optional[_Iterable[str]] = ...) -> None: ...

class HereMentionReceived(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class AllMentionReceived(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class FollowedThreadActivity(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class FollowedRoomActivity(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class ReactionReceived(_message.Message):
    __slots__ = ("message", "emoji")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    emoji: str
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ..., emoji: _Optional[str] = ...) -> None: ...

class RoomMessageReceived(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class NotificationSignal(_message.Message):
    __slots__ = ("direct_message_received", "direct_mention_received", "reply_received", "role_mention_received", "here_mention_received", "all_mention_received", "followed_thread_activity", "followed_room_activity", "reaction_received", "room_message_received")
    DIRECT_MESSAGE_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    DIRECT_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    REPLY_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    ROLE_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    HERE_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    ALL_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    FOLLOWED_THREAD_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    FOLLOWED_ROOM_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    REACTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    ROOM_MESSAGE_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    direct_message_received: DirectMessageReceived
    direct_mention_received: DirectMentionReceived
    reply_received: ReplyReceived
    role_mention_received: RoleMentionReceived
    here_mention_received: HereMentionReceived
    all_mention_received: AllMentionReceived
    followed_thread_activity: FollowedThreadActivity
    followed_room_activity: FollowedRoomActivity
    reaction_received: ReactionReceived
    room_message_received: RoomMessageReceived
    def __init__(self, direct_message_received: _Optional[_Union[DirectMessageReceived, _Mapping]] = ..., direct_mention_received: _Optional[_Union[DirectMentionReceived, _Mapping]] = ..., reply_received: _Optional[_Union[ReplyReceived, _Mapping]] = ..., role_mention_received: _Optional[_Union[RoleMentionReceived, _Mapping]] = ..., here_mention_received: _Optional[_Union[HereMentionReceived, _Mapping]] = ..., all_mention_received: _Optional[_Union[AllMentionReceived, _Mapping]] = ..., followed_thread_activity: _Optional[_Union[FollowedThreadActivity, _Mapping]] = ..., followed_room_activity: _Optional[_Union[FollowedRoomActivity, _Mapping]] = ..., reaction_received: _Optional[_Union[ReactionReceived, _Mapping]] = ..., room_message_received: _Optional[_Union[RoomMessageReceived, _Mapping]] = ...) -> None: ...

class NotificationOccurrence(_message.Message):
    __slots__ = ("id", "created_at", "actor", "signal", "unread")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    UNREAD_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor: User
    signal: NotificationSignal
    unread: bool
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[_Union[User, _Mapping]] = ..., signal: _Optional[_Union[NotificationSignal, _Mapping]] = ..., unread: _Optional[bool] = ...) -> None: ...

class PageRequest(_message.Message):
    __slots__ = ("limit", "offset")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    limit: int
    offset: int
    def __init__(self, limit: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class PageInfo(_message.Message):
    __slots__ = ("total_count", "has_more")
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    total_count: int
    has_more: bool
    def __init__(self, total_count: _Optional[int] = ..., has_more: _Optional[bool] = ...) -> None: ...

class ListNotificationOccurrencesRequest(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: PageRequest
    def __init__(self, page: _Optional[_Union[PageRequest, _Mapping]] = ...) -> None: ...

class ListNotificationOccurrencesResponse(_message.Message):
    __slots__ = ("occurrences", "page", "unread_count")
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    UNREAD_COUNT_FIELD_NUMBER: _ClassVar[int]
    occurrences: _containers.RepeatedCompositeFieldContainer[NotificationOccurrence]
    page: PageInfo
    unread_count: int
    def __init__(self, occurrences: _Optional[_Iterable[_Union[NotificationOccurrence, _Mapping]]] = ..., page: _Optional[_Union[PageInfo, _Mapping]] = ..., unread_count: _Optional[int] = ...) -> None: ...

class RealtimeSubscribe(_message.Message):
    __slots__ = ("protocol_version", "bearer_token", "resume_cursor", "initial_state")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    BEARER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESUME_CURSOR_FIELD_NUMBER: _ClassVar[int]
    INITIAL_STATE_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    bearer_token: str
    resume_cursor: str
    initial_state: RealtimeInitialState
    def __init__(self, protocol_version: _Optional[int] = ..., bearer_token: _Optional[str] = ..., resume_cursor: _Optional[str] = ..., initial_state: _Optional[_Union[RealtimeInitialState, str]] = ...) -> None: ...

class RealtimeServerFrame(_message.Message):
    __slots__ = ("event", "heartbeat", "close", "caught_up", "snapshot")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    event: RealtimeEvent
    heartbeat: RealtimeHeartbeat
    close: RealtimeClose
    caught_up: RealtimeCaughtUp
    snapshot: RealtimeSnapshot
    def __init__(self, event: _Optional[_Union[RealtimeEvent, _Mapping]] = ..., heartbeat: _Optional[_Union[RealtimeHeartbeat, _Mapping]] = ..., close: _Optional[_Union[RealtimeClose, _Mapping]] = ..., caught_up: _Optional[_Union[RealtimeCaughtUp, _Mapping]] = ..., snapshot: _Optional[_Union[RealtimeSnapshot, _Mapping]] = ...) -> None: ...

class RealtimeSnapshot(_message.Message):
    __slots__ = ("server", "rooms", "users")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    ROOMS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    server: ServerPublicProfile
    rooms: _containers.RepeatedCompositeFieldContainer[RoomWithViewerState]
    users: _containers.RepeatedCompositeFieldContainer[DirectoryMember]
    def __init__(self, server: _Optional[_Union[ServerPublicProfile, _Mapping]] = ..., rooms: _Optional[_Iterable[_Union[RoomWithViewerState, _Mapping]]] = ..., users: _Optional[_Iterable[_Union[DirectoryMember, _Mapping]]] = ...) -> None: ...

class RealtimeCaughtUp(_message.Message):
    __slots__ = ("cursor", "recovery")
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    recovery: RealtimeRecovery
    def __init__(self, cursor: _Optional[str] = ..., recovery: _Optional[_Union[RealtimeRecovery, str]] = ...) -> None: ...

class RealtimeHeartbeat(_message.Message):
    __slots__ = ("cursor",)
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    def __init__(self, cursor: _Optional[str] = ...) -> None: ...

class Duration(_message.Message):
    __slots__ = ("seconds", "nanos")
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    NANOS_FIELD_NUMBER: _ClassVar[int]
    seconds: int
    nanos: int
    def __init__(self, seconds: _Optional[int] = ..., nanos: _Optional[int] = ...) -> None: ...

class RealtimeClose(_message.Message):
    __slots__ = ("code", "message", "reconnect", "retry_after")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RECONNECT_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    code: RealtimeCloseCode
    message: str
    reconnect: bool
    retry_after: Duration
    def __init__(self, code: _Optional[_Union[RealtimeCloseCode, str]] = ..., message: _Optional[str] = ..., reconnect: _Optional[bool] = ..., retry_after: _Optional[_Union[Duration, _Mapping]] = ...) -> None: ...

class RealtimeEvent(_message.Message):
    __slots__ = ("id", "created_at", "actor_id", "cursor", "room_created", "room_updated", "room_deleted", "room_archived", "room_unarchived", "room_slow_mode_changed", "room_threading_mode_changed", "user_joined_room", "user_left_room", "message_posted", "message_edited", "message_retracted", "thread_created", "user_account_created", "user_profile_changed", "user_account_deleted", "reaction_added", "reaction_removed", "thread_viewer_state_changed", "user_typing", "presence_changed", "notification_occurrences_changed", "role_permissions_changed", "viewer_permissions_changed")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    ROOM_CREATED_FIELD_NUMBER: _ClassVar[int]
    ROOM_UPDATED_FIELD_NUMBER: _ClassVar[int]
    ROOM_DELETED_FIELD_NUMBER: _ClassVar[int]
    ROOM_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    ROOM_UNARCHIVED_FIELD_NUMBER: _ClassVar[int]
    ROOM_SLOW_MODE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    ROOM_THREADING_MODE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    USER_JOINED_ROOM_FIELD_NUMBER: _ClassVar[int]
    USER_LEFT_ROOM_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_POSTED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EDITED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_RETRACTED_FIELD_NUMBER: _ClassVar[int]
    THREAD_CREATED_FIELD_NUMBER: _ClassVar[int]
    USER_ACCOUNT_CREATED_FIELD_NUMBER: _ClassVar[int]
    USER_PROFILE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    USER_ACCOUNT_DELETED_FIELD_NUMBER: _ClassVar[int]
    REACTION_ADDED_FIELD_NUMBER: _ClassVar[int]
    REACTION_REMOVED_FIELD_NUMBER: _ClassVar[int]
    THREAD_VIEWER_STATE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    USER_TYPING_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_OCCURRENCES_CHANGED_FIELD_NUMBER: _ClassVar[int]
    ROLE_PERMISSIONS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    VIEWER_PERMISSIONS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    cursor: str
    room_created: RoomCreatedEvent
    room_updated: RoomUpdatedEvent
    room_deleted: RoomIdEvent
    room_archived: RoomIdEvent
    room_unarchived: RoomIdEvent
    room_slow_mode_changed: RoomSlowModeChangedEvent
    room_threading_mode_changed: RoomThreadingModeChangedEvent
    user_joined_room: RoomIdEvent
    user_left_room: RoomIdEvent
    message_posted: MessagePostedEvent
    message_edited: MessageRefEvent
    message_retracted: MessageRefEvent
    thread_created: ThreadCreatedEvent
    user_account_created: UserAccountCreatedEvent
    user_profile_changed: UserIdEvent
    user_account_deleted: UserIdEvent
    reaction_added: ReactionEvent
    reaction_removed: ReactionEvent
    thread_viewer_state_changed: ThreadViewerStateChangedEvent
    user_typing: UserTypingEvent
    presence_changed: PresenceChangedEvent
    notification_occurrences_changed: NotificationOccurrencesChangedEvent
    role_permissions_changed: RolePermissionsChangedEvent
    viewer_permissions_changed: ViewerPermissionsChangedEvent
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., cursor: _Optional[str] = ..., room_created: _Optional[_Union[RoomCreatedEvent, _Mapping]] = ..., room_updated: _Optional[_Union[RoomUpdatedEvent, _Mapping]] = ..., room_deleted: _Optional[_Union[RoomIdEvent, _Mapping]] = ..., room_archived: _Optional[_Union[RoomIdEvent, _Mapping]] = ..., room_unarchived: _Optional[_Union[RoomIdEvent, _Mapping]] = ..., room_slow_mode_changed: _Optional[_Union[RoomSlowModeChangedEvent, _Mapping]] = ..., room_threading_mode_changed: _Optional[_Union[RoomThreadingModeChangedEvent, _Mapping]] = ..., user_joined_room: _Optional[_Union[RoomIdEvent, _Mapping]] = ..., user_left_room: _Optional[_Union[RoomIdEvent, _Mapping]] = ..., message_posted: _Optional[_Union[MessagePostedEvent, _Mapping]] = ..., message_edited: _Optional[_Union[MessageRefEvent, _Mapping]] = ..., message_retracted: _Optional[_Union[MessageRefEvent, _Mapping]] = ..., thread_created: _Optional[_Union[ThreadCreatedEvent, _Mapping]] = ..., user_account_created: _Optional[_Union[UserAccountCreatedEvent, _Mapping]] = ..., user_profile_changed: _Optional[_Union[UserIdEvent, _Mapping]] = ..., user_account_deleted: _Optional[_Union[UserIdEvent, _Mapping]] = ..., reaction_added: _Optional[_Union[ReactionEvent, _Mapping]] = ..., reaction_removed: _Optional[_Union[ReactionEvent, _Mapping]] = ..., thread_viewer_state_changed: _Optional[_Union[ThreadViewerStateChangedEvent, _Mapping]] = ..., user_typing: _Optional[_Union[UserTypingEvent, _Mapping]] = ..., presence_changed: _Optional[_Union[PresenceChangedEvent, _Mapping]] = ..., notification_occurrences_changed: _Optional[_Union[NotificationOccurrencesChangedEvent, _Mapping]] = ..., role_permissions_changed: _Optional[_Union[RolePermissionsChangedEvent, _Mapping]] = ..., viewer_permissions_changed: _Optional[_Union[ViewerPermissionsChangedEvent, _Mapping]] = ...) -> None: ...

class RoomIdEvent(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class RoomCreatedEvent(_message.Message):
    __slots__ = ("room_id", "name", "description", "kind", "universal", "threading_mode")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    UNIVERSAL_FIELD_NUMBER: _ClassVar[int]
    THREADING_MODE_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    name: str
    description: str
    kind: RoomKind
    universal: bool
    threading_mode: RoomThreadingMode
    def __init__(self, room_id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., kind: _Optional[_Union[RoomKind, str]] = ..., universal: _Optional[bool] = ..., threading_mode: _Optional[_Union[RoomThreadingMode, str]] = ...) -> None: ...

class RoomUpdatedEvent(_message.Message):
    __slots__ = ("room_id", "name", "description")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    name: str
    description: str
    def __init__(self, room_id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class RoomSlowModeChangedEvent(_message.Message):
    __slots__ = ("room_id", "slow_mode_seconds", "thread_slow_mode_seconds")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    SLOW_MODE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    THREAD_SLOW_MODE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    slow_mode_seconds: int
    thread_slow_mode_seconds: int
    def __init__(self, room_id: _Optional[str] = ..., slow_mode_seconds: _Optional[int] = ..., thread_slow_mode_seconds: _Optional[int] = ...) -> None: ...

class RoomThreadingModeChangedEvent(_message.Message):
    __slots__ = ("room_id", "threading_mode")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREADING_MODE_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    threading_mode: RoomThreadingMode
    def __init__(self, room_id: _Optional[str] = ..., threading_mode: _Optional[_Union[RoomThreadingMode, str]] = ...) -> None: ...

class DirectUserMention(_message.Message):
    __slots__ = ("user_id",)
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    def __init__(self, user_id: _Optional[str] = ...) -> None: ...

class RoleMessageMention(_message.Message):
    __slots__ = ("role_name",)
    ROLE_NAME_FIELD_NUMBER: _ClassVar[int]
    role_name: str
    def __init__(self, role_name: _Optional[str] = ...) -> None: ...

class HereMessageMention(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllMessageMention(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MessageMention(_message.Message):
    __slots__ = ("direct", "role", "here", "all", "includes_viewer")
    DIRECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    HERE_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    INCLUDES_VIEWER_FIELD_NUMBER: _ClassVar[int]
    direct: DirectUserMention
    role: RoleMessageMention
    here: HereMessageMention
    all: AllMessageMention
    includes_viewer: bool
    def __init__(self, direct: _Optional[_Union[DirectUserMention, _Mapping]] = ..., role: _Optional[_Union[RoleMessageMention, _Mapping]] = ..., here: _Optional[_Union[HereMessageMention, _Mapping]] = ..., all: _Optional[_Union[AllMessageMention, _Mapping]] = ..., includes_viewer: _Optional[bool] = ...) -> None: ...

class MessagePostedEvent(_message.Message):
    __slots__ = ("room_id", "in_reply_to", "thread_root_event_id", "echo_of_event_id", "echo_from_thread_root_event_id", "mentions", "body_plaintext", "room_kind")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    IN_REPLY_TO_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ECHO_OF_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ECHO_FROM_THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    MENTIONS_FIELD_NUMBER: _ClassVar[int]
    BODY_PLAINTEXT_FIELD_NUMBER: _ClassVar[int]
    ROOM_KIND_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    in_reply_to: str
    thread_root_event_id: str
    echo_of_event_id: str
    echo_from_thread_root_event_id: str
    mentions: _containers.RepeatedCompositeFieldContainer[MessageMention]
    body_plaintext: str
    room_kind: RoomKind
    def __init__(self, room_id: _Optional[str] = ..., in_reply_to: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., echo_of_event_id: _Optional[str] = ..., echo_from_thread_root_event_id: _Optional[str] = ..., mentions: _Optional[_Iterable[_Union[MessageMention, _Mapping]]] = ..., body_plaintext: _Optional[str] = ..., room_kind: _Optional[_Union[RoomKind, str]] = ...) -> None: ...

class MessageRefEvent(_message.Message):
    __slots__ = ("room_id", "message_event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    message_event_id: str
    def __init__(self, room_id: _Optional[str] = ..., message_event_id: _Optional[str] = ...) -> None: ...

class ThreadCreatedEvent(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ...) -> None: ...

class UserAccountCreatedEvent(_message.Message):
    __slots__ = ("user_id", "is_bot")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_BOT_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    is_bot: bool
    def __init__(self, user_id: _Optional[str] = ..., is_bot: _Optional[bool] = ...) -> None: ...

class UserIdEvent(_message.Message):
    __slots__ = ("user_id",)
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    def __init__(self, user_id: _Optional[str] = ...) -> None: ...

class ReactionEvent(_message.Message):
    __slots__ = ("room_id", "message_event_id", "emoji")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    message_event_id: str
    emoji: str
    def __init__(self, room_id: _Optional[str] = ..., message_event_id: _Optional[str] = ..., emoji: _Optional[str] = ...) -> None: ...

class ThreadViewerStateChangedEvent(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id", "is_following")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IS_FOLLOWING_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    is_following: bool
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., is_following: _Optional[bool] = ...) -> None: ...

class UserTypingEvent(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ...) -> None: ...

class PresenceChangedEvent(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: PresenceStatus
    def __init__(self, status: _Optional[_Union[PresenceStatus, str]] = ...) -> None: ...

class NotificationOccurrencesChangedEvent(_message.Message):
    __slots__ = ("created_notification_id",)
    CREATED_NOTIFICATION_ID_FIELD_NUMBER: _ClassVar[int]
    created_notification_id: str
    def __init__(self, created_notification_id: _Optional[str] = ...) -> None: ...

class RolePermissionsChangedEvent(_message.Message):
    __slots__ = ("role_name",)
    ROLE_NAME_FIELD_NUMBER: _ClassVar[int]
    role_name: str
    def __init__(self, role_name: _Optional[str] = ...) -> None: ...

class ViewerPermissionsChangedEvent(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AssetUpload(_message.Message):
    __slots__ = ("upload_id", "room_id", "status", "committed_offset", "size", "max_chunk_size", "sha256", "expires_at", "asset_id")
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    ASSET_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    room_id: str
    status: AssetUploadStatus
    committed_offset: int
    size: int
    max_chunk_size: int
    sha256: str
    expires_at: _timestamp_pb2.Timestamp
    asset_id: str
    def __init__(self, upload_id: _Optional[str] = ..., room_id: _Optional[str] = ..., status: _Optional[_Union[AssetUploadStatus, str]] = ..., committed_offset: _Optional[int] = ..., size: _Optional[int] = ..., max_chunk_size: _Optional[int] = ..., sha256: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., asset_id: _Optional[str] = ...) -> None: ...

class Asset(_message.Message):
    __slots__ = ("id", "filename", "content_type", "size", "width", "height", "asset_url", "thumbnail_asset_url")
    ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    THUMBNAIL_ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    id: str
    filename: str
    content_type: str
    size: int
    width: int
    height: int
    asset_url: MessageAssetUrl
    thumbnail_asset_url: MessageAssetUrl
    def __init__(self, id: _Optional[str] = ..., filename: _Optional[str] = ..., content_type: _Optional[str] = ..., size: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., asset_url: _Optional[_Union[MessageAssetUrl, _Mapping]] = ..., thumbnail_asset_url: _Optional[_Union[MessageAssetUrl, _Mapping]] = ...) -> None: ...

class CreateUploadRequest(_message.Message):
    __slots__ = ("room_id", "filename", "content_type", "size", "sha256")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    filename: str
    content_type: str
    size: int
    sha256: str
    def __init__(self, room_id: _Optional[str] = ..., filename: _Optional[str] = ..., content_type: _Optional[str] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class CreateUploadResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class UploadChunkRequest(_message.Message):
    __slots__ = ("upload_id", "offset", "content", "chunk_sha256")
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SHA256_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    offset: int
    content: bytes
    chunk_sha256: str
    def __init__(self, upload_id: _Optional[str] = ..., offset: _Optional[int] = ..., content: _Optional[bytes] = ..., chunk_sha256: _Optional[str] = ...) -> None: ...

class UploadChunkResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class GetUploadRequest(_message.Message):
    __slots__ = ("upload_id",)
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    def __init__(self, upload_id: _Optional[str] = ...) -> None: ...

class GetUploadResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class CompleteUploadRequest(_message.Message):
    __slots__ = ("upload_id",)
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    def __init__(self, upload_id: _Optional[str] = ...) -> None: ...

class CompleteUploadResponse(_message.Message):
    __slots__ = ("upload", "asset")
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    ASSET_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    asset: Asset
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ..., asset: _Optional[_Union[Asset, _Mapping]] = ...) -> None: ...

class CancelUploadRequest(_message.Message):
    __slots__ = ("upload_id",)
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    def __init__(self, upload_id: _Optional[str] = ...) -> None: ...

class CancelUploadResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class GetAssetRequest(_message.Message):
    __slots__ = ("room_id", "asset_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    ASSET_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    asset_id: str
    def __init__(self, room_id: _Optional[str] = ..., asset_id: _Optional[str] = ...) -> None: ...

class GetAssetResponse(_message.Message):
    __slots__ = ("asset",)
    ASSET_FIELD_NUMBER: _ClassVar[int]
    asset: Asset
    def __init__(self, asset: _Optional[_Union[Asset, _Mapping]] = ...) -> None: ...
